import type { Attributes, Span, SpanKind, Tracer } from '@opentelemetry/api';
import type { Observable, Subscription } from 'rxjs';
import type { SequencedEvent, StepwiseEvent } from '../streams/events.js';
import { loadOtelApi } from './otel-api.js';

/** The open spans of one run: the run's own, its inference, and its tool calls and pauses by id. */
interface RunSpans {
  readonly span: Span;
  /**
   * False under OpenTelemetry's no-op tracer (no SDK registered): the run's events then cost one map
   * lookup each and no span objects (issue 13: with no SDK, tracing costs about what no tracing does).
   */
  readonly recording: boolean;
  inference: Span | undefined;
  readonly tools: Map<string, Span>;
  /** Open pauses with when they began: the span says how long each waited. */
  readonly pauses: Map<string, { readonly span: Span; readonly at: number }>;
}

type EventOf<T extends StepwiseEvent['type']> = Extract<StepwiseEvent, { type: T }>;

/**
 * Traces runs from the events they publish (docs/protocol.md, Traces): one span per run, per inference (GenAI semantic
 * conventions: operation, model, token usage), per tool call (tool name and call id) and per pause
 * (its reason and `by`). It only watches the hub, so the loop carries no tracing code; spans start
 * and end at the events' own `at`, so their durations are exact in virtual time too.
 * With `@opentelemetry/api`'s default tracer (no SDK registered) every span is a no-op.
 */
export function traceRuns(events$: Observable<SequencedEvent>, tracer: Tracer): Subscription {
  const spans: OpenSpans = { tracer, runs: new Map(), silent: undefined };
  return events$.subscribe(({ event }) => traceEvent(spans, event));
}

/** What the handlers share for one `traceRuns` subscription: its tracer and every run's open spans. */
interface OpenSpans {
  readonly tracer: Tracer;
  readonly runs: Map<string, RunSpans>;
  /** The entry every non-recording run shares, made from the first such run's (no-op) span. */
  silent: RunSpans | undefined;
}

function traceEvent(spans: OpenSpans, event: StepwiseEvent): void {
  switch (event.type) {
    case 'run-started':
      return void runOf(spans, event, false);
    case 'inference-started':
      return inferenceStarted(spans, event);
    case 'inference-finished':
      return inferenceFinished(spans, event);
    case 'inference-failed':
      return inferenceFailed(spans, event);
    case 'tool-execution-started':
      return toolStarted(spans, event);
    case 'tool-result':
      return toolResult(spans, event);
    case 'tool-execution-finished':
      return toolFinished(spans, event);
    case 'paused':
      return paused(spans, event);
    case 'resumed':
      return resumed(spans, event);
    case 'run-ended':
      return runEnded(spans, event);
    default:
      // Deltas and logs say nothing a span needs.
      return undefined;
  }
}

/** The run's spans; a run recovered after a restart publishes no `run-started`, so it starts here. */
function runOf(spans: OpenSpans, event: StepwiseEvent, resumed = true): RunSpans {
  let run = spans.runs.get(event.inference_id);
  if (!run) {
    const span = startRunSpan(spans.tracer, event, resumed);
    // A run that records nothing shares one entry: its own span and maps held memory for every
    // paused run and are never read (every handler stops at `recording`).
    run = span.isRecording()
      ? { span, recording: true, inference: undefined, tools: new Map(), pauses: new Map() }
      : (spans.silent ??= { span, recording: false, inference: undefined, tools: new Map(), pauses: new Map() });
    spans.runs.set(event.inference_id, run);
  }
  return run;
}

function startRunSpan(tracer: Tracer, event: StepwiseEvent, resumed: boolean): Span {
  const attributes = {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'stepwise',
    'gen_ai.conversation.id': event.conv_id,
    'stepwise.session.id': event.session_id,
    'stepwise.run.id': event.inference_id,
    'stepwise.turn.id': event.turn_id,
    ...(resumed ? { 'stepwise.run.resumed': true } : {}),
  };
  const { ROOT_CONTEXT, SpanKind } = loadOtelApi();
  return tracer.startSpan('invoke_agent stepwise', { kind: SpanKind.INTERNAL, startTime: timeOf(event.at), attributes }, ROOT_CONTEXT);
}

/** A span under the run's. */
function child(spans: OpenSpans, run: RunSpans, name: string, at: number, attributes: Attributes, kind?: SpanKind): Span {
  const { ROOT_CONTEXT, SpanKind: Kinds, trace } = loadOtelApi();
  return spans.tracer.startSpan(name, { kind: kind ?? Kinds.INTERNAL, startTime: timeOf(at), attributes }, trace.setSpan(ROOT_CONTEXT, run.span));
}

/** The run's spans when they record anything. */
function recordingRunOf(spans: OpenSpans, event: StepwiseEvent): RunSpans | undefined {
  const run = runOf(spans, event);
  return run.recording ? run : undefined;
}

function inferenceStarted(spans: OpenSpans, event: EventOf<'inference-started'>): void {
  const run = recordingRunOf(spans, event);
  if (!run) return;
  run.inference?.end(timeOf(event.at));
  const attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': event.model,
    ...(event.provider === undefined ? {} : { 'gen_ai.provider.name': event.provider }),
  };
  run.inference = child(spans, run, `chat ${event.model}`, event.at, attributes, loadOtelApi().SpanKind.CLIENT);
}

function inferenceFinished(spans: OpenSpans, event: EventOf<'inference-finished'>): void {
  const run = recordingRunOf(spans, event);
  if (!run) return;
  run.inference?.setAttributes({
    'gen_ai.response.model': event.model,
    'gen_ai.usage.input_tokens': event.usage.input_tokens,
    'gen_ai.usage.output_tokens': event.usage.output_tokens,
    ...(event.stop_reason === null ? {} : { 'gen_ai.response.finish_reasons': [event.stop_reason] }),
  });
  run.inference?.end(timeOf(event.at));
  run.inference = undefined;
}

function inferenceFailed(spans: OpenSpans, event: EventOf<'inference-failed'>): void {
  const run = recordingRunOf(spans, event);
  if (!run) return;
  failed(run.inference, event.code ?? 'inference_failed', event.message);
  run.inference?.end(timeOf(event.at));
  run.inference = undefined;
}

function toolStarted(spans: OpenSpans, event: EventOf<'tool-execution-started'>): void {
  const run = recordingRunOf(spans, event);
  if (!run) return;
  const attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': event.name, 'gen_ai.tool.call.id': event.tool_call_id };
  run.tools.set(event.tool_call_id, child(spans, run, `execute_tool ${event.name}`, event.at, attributes));
}

function toolResult(spans: OpenSpans, event: EventOf<'tool-result'>): void {
  if (event.error !== undefined) failed(spans.runs.get(event.inference_id)?.tools.get(event.tool_call_id), 'tool_error', event.error);
}

function toolFinished(spans: OpenSpans, event: EventOf<'tool-execution-finished'>): void {
  const tools = spans.runs.get(event.inference_id)?.tools;
  tools?.get(event.tool_call_id)?.end(timeOf(event.at));
  tools?.delete(event.tool_call_id);
}

function paused(spans: OpenSpans, event: EventOf<'paused'>): void {
  const run = recordingRunOf(spans, event);
  if (!run) return;
  const { pause } = event;
  const attributes = {
    'stepwise.pause.id': pause.pause_id,
    'stepwise.pause.phase': pause.phase,
    'stepwise.pause.deadline_ms': pause.deadline_ms,
    'stepwise.pause.tools': pause.tool_calls.map((call) => call.name),
  };
  run.pauses.set(pause.pause_id, { span: child(spans, run, `stepwise.pause ${pause.phase}`, event.at, attributes), at: event.at });
}

function resumed(spans: OpenSpans, event: EventOf<'resumed'>): void {
  const pauses = spans.runs.get(event.inference_id)?.pauses;
  const pause = pauses?.get(event.pause_id);
  if (!pause) return;
  pause.span.setAttributes({
    'stepwise.pause.reason': event.reason,
    'stepwise.pause.by': event.by ?? 'system',
    'stepwise.pause.waited_ms': event.at - pause.at,
  });
  pause.span.end(timeOf(event.at));
  pauses?.delete(event.pause_id);
}

function runEnded(spans: OpenSpans, event: EventOf<'run-ended'>): void {
  const run = spans.runs.get(event.inference_id);
  if (!run) return;
  spans.runs.delete(event.inference_id);
  if (!run.recording) return;
  // A cancel or failure can end the run with its inference, tools or pause still open.
  const pauses = [...run.pauses.values()].map((pause) => pause.span);
  for (const open of [run.inference, ...run.tools.values(), ...pauses]) open?.end(timeOf(event.at));
  run.span.setAttribute('stepwise.run.status', event.status);
  if (event.status === 'failed') failed(run.span, 'run_failed', event.error ?? 'the run failed');
  run.span.end(timeOf(event.at));
}

/**
 * An event's `at` is epoch ms from the runtime's scheduler (small numbers in virtual time). As a bare
 * number OpenTelemetry would read a small one as a `performance.now()` reading; a Date is unambiguous.
 */
const timeOf = (at: number): Date => new Date(at);

function failed(span: Span | undefined, type: string, message: string): void {
  span?.setAttribute('error.type', type);
  span?.setStatus({ code: loadOtelApi().SpanStatusCode.ERROR, message });
}
