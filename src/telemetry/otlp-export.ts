import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

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
 */
export function exportTracesFromEnv(env: Env): TraceExport | undefined {
  const endpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] ?? env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  if (!endpoint) return undefined;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env['OTEL_SERVICE_NAME'] ?? 'stepwise' }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  trace.setGlobalTracerProvider(provider);
  return { endpoint, shutdown: () => provider.shutdown() };
}
