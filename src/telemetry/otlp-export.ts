import { loadOtelApi } from './otel-api.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A registered OpenTelemetry SDK; `shutdown` sends what is still batched. */
export interface TraceExport {
  readonly endpoint: string;
  shutdown(): Promise<void>;
}

/**
 * When `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, registers an
 * OpenTelemetry SDK that exports every span over OTLP/HTTP in batches, so the runtime's default
 * tracer stops being a no-op. The exporter reads the standard OTEL_* variables (headers, timeout) itself.
 *
 * The SDK is loaded only then: importing it with the library would be a large part of what
 * `import('stepwise')` costs, for every user who never exports a trace.
 */
export async function exportTracesFromEnv(env: Env): Promise<TraceExport | undefined> {
  const endpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] ?? env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  if (!endpoint) return undefined;
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor, TracerProvider }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
  ]);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env['OTEL_SERVICE_NAME'] ?? 'stepwise' }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  loadOtelApi().trace.setGlobalTracerProvider(provider);
  return { endpoint, shutdown: () => provider.shutdown() };
}
