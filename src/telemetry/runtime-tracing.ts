import type { Tracer } from '@opentelemetry/api';
import type { Observable, Subscription } from 'rxjs';
import type { SequencedEvent } from '../streams/events.js';
import { loadOtelApi } from './otel-api.js';
import { traceRuns } from './run-spans.js';

/** A runtime's tracing: `traceRuns` on its hub, connected once spans have somewhere to go. */
export interface RuntimeTracing {
  /** Called as a run starts, before it publishes anything: connects when an SDK has been registered since. */
  runStarting(): void;
  unsubscribe(): void;
}

const NO_TRACING: RuntimeTracing = Object.freeze({ runStarting: () => undefined, unsubscribe: () => undefined });

/**
 * A tracer given (`StepwiseConfig.tracer`) is followed from the start; `null` traces nothing. The
 * default, OpenTelemetry's global tracer, is a no-op until an SDK is registered, and following every
 * event of the hub for a no-op cost a measurable share of every step: it is
 * connected at the first run that starts once an SDK is registered (`@opentelemetry/api` hands out a
 * `ProxyTracer` only while none is). Runs that started before it are traced from their next event on.
 */
export function createRuntimeTracing(events$: Observable<SequencedEvent>, tracer: Tracer | null | undefined): RuntimeTracing {
  if (tracer === null) return NO_TRACING;
  if (tracer) return connected(traceRuns(events$, tracer));
  const { ProxyTracer, trace } = loadOtelApi();
  let subscription: Subscription | undefined;
  let stopped = false;
  return {
    runStarting: () => {
      if (subscription || stopped) return;
      const global = trace.getTracer('stepwise');
      if (!(global instanceof ProxyTracer)) subscription = traceRuns(events$, global);
    },
    unsubscribe: () => {
      stopped = true;
      subscription?.unsubscribe();
    },
  };
}

const connected = (subscription: Subscription): RuntimeTracing => ({ runStarting: () => undefined, unsubscribe: () => subscription.unsubscribe() });
