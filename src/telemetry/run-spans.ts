import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import type { Observable, Subscription } from 'rxjs';
import type { SequencedEvent, StepwiseEvent } from '../streams/events.js';
import { loadOtelApi } from './otel-api.js';

/** The open spans of one run: the run's own, its inference, and its tool calls and pauses by id. */
interface RunSpans {
  readonly span: Span;
  /**
   * False under OpenTelemetry's no-op tracer (no SDK registered): the run's events then cost one map
   * lookup each and no span objects (issue 13: `loop_step_otel_noop` within 5% of no tracing).
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
  const { ROOT_CONTEXT, SpanKind, trace } = loadOtelApi();
  const runs = new Map<string, RunSpans>();
  // The entry every non-recording run shares, made from the first such run's (no-op) span.
  let silent: RunSpans | undefined;
  const notRecording = (span: Span): RunSpans => (silent ??= { span, recording: false, inference: undefined, tools: new Map(), pauses: new Map() });

  /** The run's spans; a run recovered after a restart publishes no `run-started`, so it starts here. */
  const runOf = (event: StepwiseEvent, resumed = true): RunSpans => {
    let run = runs.get(event.inference_id);
    if (!run) {
      const span = tracer.startSpan(
        'invoke_agent stepwise',
        {
          kind: SpanKind.INTERNAL,
          startTime: timeOf(event.at),
          attributes: {
            'gen_ai.operation.name': 'invoke_agent',
            'gen_ai.agent.name': 'stepwise',
            'gen_ai.conversation.id': event.conv_id,
            'stepwise.session.id': event.session_id,
            'stepwise.run.id': event.inference_id,
            'stepwise.turn.id': event.turn_id,
            ...(resumed ? { 'stepwise.run.resumed': true } : {}),
          },
        },
        ROOT_CONTEXT,
      );
      // A run that records nothing shares one entry: its own span and maps held 0.4 KB per paused run
      // (`paused_heap_per_run`) and are never read (every handler stops at `recording`).
      run = span.isRecording() ? { span, recording: true, inference: undefined, tools: new Map(), pauses: new Map() } : notRecording(span);
      runs.set(event.inference_id, run);
    }
    return run;
  };
  const child = (run: RunSpans, name: string, at: number, attributes: Attributes, kind = SpanKind.INTERNAL): Span =>
    tracer.startSpan(name, { kind, startTime: timeOf(at), attributes }, trace.setSpan(ROOT_CONTEXT, run.span));

  /** The run's spans when they record anything. */
  const recordingRunOf = (event: StepwiseEvent): RunSpans | undefined => {
    const run = runOf(event);
    return run.recording ? run : undefined;
  };

  const inferenceStarted = (event: EventOf<'inference-started'>): void => {
    const run = recordingRunOf(event);
    if (!run) return;
    run.inference?.end(timeOf(event.at));
    const attributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': event.model,
      ...(event.provider === undefined ? {} : { 'gen_ai.provider.name': event.provider }),
    };
    run.inference = child(run, `chat ${event.model}`, event.at, attributes, SpanKind.CLIENT);
  };
  const inferenceFinished = (event: EventOf<'inference-finished'>): void => {
    const run = recordingRunOf(event);
    if (!run) return;
    run.inference?.setAttributes({
      'gen_ai.response.model': event.model,
      'gen_ai.usage.input_tokens': event.usage.input_tokens,
      'gen_ai.usage.output_tokens': event.usage.output_tokens,
      ...(event.stop_reason === null ? {} : { 'gen_ai.response.finish_reasons': [event.stop_reason] }),
    });
    run.inference?.end(timeOf(event.at));
    run.inference = undefined;
  };
  const inferenceFailed = (event: EventOf<'inference-failed'>): void => {
    const run = recordingRunOf(event);
    if (!run) return;
    failed(run.inference, event.code ?? 'inference_failed', event.message);
    run.inference?.end(timeOf(event.at));
    run.inference = undefined;
  };
  const toolStarted = (event: EventOf<'tool-execution-started'>): void => {
    const run = recordingRunOf(event);
    if (!run) return;
    const attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': event.name, 'gen_ai.tool.call.id': event.tool_call_id };
    run.tools.set(event.tool_call_id, child(run, `execute_tool ${event.name}`, event.at, attributes));
  };
  const toolResult = (event: EventOf<'tool-result'>): void => {
    if (event.error !== undefined) failed(runs.get(event.inference_id)?.tools.get(event.tool_call_id), 'tool_error', event.error);
  };
  const toolFinished = (event: EventOf<'tool-execution-finished'>): void => {
    const tools = runs.get(event.inference_id)?.tools;
    tools?.get(event.tool_call_id)?.end(timeOf(event.at));
    tools?.delete(event.tool_call_id);
  };
  const paused = (event: EventOf<'paused'>): void => {
    const run = recordingRunOf(event);
    if (!run) return;
    const { pause } = event;
    const attributes = {
      'stepwise.pause.id': pause.pause_id,
      'stepwise.pause.phase': pause.phase,
      'stepwise.pause.deadline_ms': pause.deadline_ms,
      'stepwise.pause.tools': pause.tool_calls.map((call) => call.name),
    };
    run.pauses.set(pause.pause_id, { span: child(run, `stepwise.pause ${pause.phase}`, event.at, attributes), at: event.at });
  };
  const resumed = (event: EventOf<'resumed'>): void => {
    const pauses = runs.get(event.inference_id)?.pauses;
    const pause = pauses?.get(event.pause_id);
    if (!pause) return;
    pause.span.setAttributes({
      'stepwise.pause.reason': event.reason,
      'stepwise.pause.by': event.by ?? 'system',
      'stepwise.pause.waited_ms': event.at - pause.at,
    });
    pause.span.end(timeOf(event.at));
    pauses?.delete(event.pause_id);
  };
  const runEnded = (event: EventOf<'run-ended'>): void => {
    const run = runs.get(event.inference_id);
    if (!run) return;
    runs.delete(event.inference_id);
    if (!run.recording) return;
    // A cancel or failure can end the run with its inference, tools or pause still open.
    const pauses = [...run.pauses.values()].map((pause) => pause.span);
    for (const open of [run.inference, ...run.tools.values(), ...pauses]) open?.end(timeOf(event.at));
    run.span.setAttribute('stepwise.run.status', event.status);
    if (event.status === 'failed') failed(run.span, 'run_failed', event.error ?? 'the run failed');
    run.span.end(timeOf(event.at));
  };

  return events$.subscribe(({ event }) => {
    switch (event.type) {
      case 'run-started':
        return void runOf(event, false);
      case 'inference-started':
        return inferenceStarted(event);
      case 'inference-finished':
        return inferenceFinished(event);
      case 'inference-failed':
        return inferenceFailed(event);
      case 'tool-execution-started':
        return toolStarted(event);
      case 'tool-result':
        return toolResult(event);
      case 'tool-execution-finished':
        return toolFinished(event);
      case 'paused':
        return paused(event);
      case 'resumed':
        return resumed(event);
      case 'run-ended':
        return runEnded(event);
      default:
        // Deltas and logs say nothing a span needs.
        return undefined;
    }
  });
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
