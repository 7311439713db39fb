export { traceRuns } from './run-spans.js';
export { exportTracesFromEnv, type TraceExport } from './otlp-export.js';
