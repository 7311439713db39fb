import { catchError, concatMap, defer, map, of, reduce, type Observable, type OperatorFunction } from 'rxjs';
import { messageId } from '../core/message-ids.js';
import { charsWithin } from '../core/json-bounds.js';
import type { Block, ToolCallBlock } from '../core/turns.js';
import { EngineError, type EngineEvent } from '../core/engine.js';
import { eventFrom } from '../streams/events.js';
import { endWith, engineOf, hasEnded, registryOf, withAnswer, type LoopPorts, type LoopState } from './loop-state.js';

export type InferencePorts = Pick<LoopPorts, 'engine' | 'registry' | 'publish' | 'scheduler' | 'ids'>;

/**
 * Runs one inference per state: sends the transcript and the allowed tools to the engine, publishes
 * what streams back as events, and appends the reasoning, text and tool_call blocks to the turn.
 *
 * ```
 * state:   --s-------------------|
 * engine:    --d--d--c--f|           (d text delta, c tool call, f finished)
 * events:    i-D--D--R--F            (inference-started, text-delta, tool-call-requested, inference-finished)
 * output:  -------------s'-------|   (s' = s + text and tool_call blocks, iteration + 1)
 * ```
 *
 * Completes when its source completes; states that have ended pass through untouched. An engine
 * failure is a value: an `inference-failed` event and a state ended as `failed`. Unsubscribing
 * (cancellation) unsubscribes the engine, which aborts its request.
 *
 * @example
 * of(state).pipe(inference(ports)) // emits the state with the model's answer appended
 */
export function inference(ports: InferencePorts): OperatorFunction<LoopState, LoopState> {
  // concatMap: one inference at a time, in order; the loop never has two in flight.
  return concatMap((state) => (hasEnded(state) ? of(state) : inferOnce(ports, state)));
}

/**
 * One inference for one state that has not ended: what `inference` does per state, as a function the
 * tool loop calls once per inference phase (no concatMap around a single state).
 */
export function inferOnce(ports: InferencePorts, state: LoopState): Observable<LoopState> {
  const { run } = state;
  const { publish, scheduler } = ports;
  const engine = engineOf(ports, run);
  // The model message this inference is, named by the run's count of inferences: the same on every
  // instance and after a restart (a resumed inference is the same message again).
  const message = messageId(run.inference_id, state.iteration + 1);
  return defer(() => {
    const startedAt = scheduler.now();
    publish(eventFrom('inference-started', run, startedAt, { message_id: message, model: engine.model, provider: engine.name }));
    const request = {
      conv_id: run.conv_id,
      session_id: run.session_id,
      inference_id: run.inference_id,
      message_id: message,
      turn_id: run.turn_id,
      blocks: run.history.length === 0 ? state.blocks : [...run.history, ...state.blocks],
      tools: registryOf(ports, run).specs(run.allowedTools),
    };
    // Unsubscribing (cancellation) unsubscribes the engine, which aborts its request.
    return engine.infer(request).pipe(
      reduce(foldAnswer(ports, state, message), emptyAnswer()),
      map((answer) => answered(ports, state, answer, startedAt, message)),
    );
  }).pipe(
    // Errors are values: a failed inference ends this run, never the session's streams. Outside
    // defer, so an engine that throws instead of erroring its stream fails this run only too.
    catchError((error: unknown) => of(failed(ports, state, error, message))),
  );
}

/** The model's answer as it streams in; each inference folds into its own. */
interface Answer {
  text: string;
  reasoning: string;
  /** Reasoning comes first; whatever follows it (text, a call, the end) closes it. */
  reasoningOpen: boolean;
  readonly calls: ToolCallBlock[];
  finished?: Extract<EngineEvent, { type: 'finished' }>;
  /** Text of the arguments kept so far (see `refusalOf`). */
  argsChars: number;
  /** Calls refused as they came (see `refusalOf`): their `tool_use` errors follow the answer. */
  refused?: { readonly id: string; readonly name: string; readonly error: string }[];
}

const emptyAnswer = (): Answer => ({ text: '', reasoning: '', reasoningOpen: false, calls: [], argsChars: 0 });

/**
 * Whether the answer or the turn so far has a call with this id already: a short scan, where a Set per
 * inference cost heap every step. A turn's `tool_use` blocks are matched to calls by id, so a model
 * repeating an id of an earlier step would otherwise answer its new call with the old result.
 */
function hasCall(answer: Answer, blocks: readonly Block[], id: string): boolean {
  for (const call of answer.calls) if (call.payload.id === id) return true;
  for (const block of blocks) if (block.kind === 'tool_call' && block.payload.id === id) return true;
  return false;
}

/**
 * A provider's call id, when it is one a transcript can carry. Decisions key their edits, answers and
 * digests by call id: an id that names a property every object has would be read from its prototype.
 */
const isUsableId = (id: unknown): id is string =>
  typeof id === 'string' && id.length > 0 && id.length <= MAX_CALL_ID_LENGTH && !(id.length <= LONGEST_PROTOTYPE_NAME && PROTOTYPE_NAMES.has(id));
const MAX_CALL_ID_LENGTH = 256;
/**
 * The names every object has, read once: `id in Object.prototype` interns each new id into the
 * engine's string table first, a cost every call paid for ids that are all different. A provider's
 * ids are longer than any of these names, so most are ruled out by their length alone.
 */
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));
const LONGEST_PROTOTYPE_NAME = Math.max(...[...PROTOTYPE_NAMES].map((name) => name.length));

/**
 * Why the model's arguments are refused where they enter (docs/protocol.md, Untrusted input), if they
 * are: past this point digests, validation, the store and the wire walk them. A refused call gets a
 * `tool_use` error the model sees, never a pause, and nothing runs. The answer's calls share one budget
 * of text: what fits is kept, in the order the calls came.
 */
function refusalOf(answer: Answer, args: unknown): string | undefined {
  const found = charsWithin(args, MAX_ARGS_CHARS - answer.argsChars);
  if (typeof found === 'number') {
    answer.argsChars += found;
    return undefined;
  }
  return found === 'too_deep' ? ARGS_TOO_DEEP : ARGS_TOO_LARGE;
}
/** As much text as a request body may hold: what a client may not send in one request, a model may not in one answer. */
const MAX_ARGS_CHARS = 1024 * 1024;
export const ARGS_TOO_DEEP = 'arguments nested too deeply';
export const ARGS_TOO_LARGE = 'arguments too large';

function closeReasoning(ports: InferencePorts, run: LoopState['run'], answer: Answer, message: string): void {
  if (!answer.reasoningOpen) return;
  answer.reasoningOpen = false;
  ports.publish(eventFrom('reasoning-finished', run, ports.scheduler.now(), { message_id: message, text: answer.reasoning }));
}

/** Adds one engine event to the answer and publishes what it says, with the text so far. */
function foldAnswer(ports: InferencePorts, state: LoopState, message: string) {
  const { publish, scheduler, ids } = ports;
  const { run } = state;
  return (answer: Answer, event: EngineEvent): Answer => {
    if (event.type !== 'reasoning-delta') closeReasoning(ports, run, answer, message);
    switch (event.type) {
      case 'text-delta':
        answer.text += event.delta;
        publish(eventFrom('text-delta', run, scheduler.now(), { message_id: message, delta: event.delta, cumulative: answer.text }));
        break;
      case 'reasoning-delta': {
        const now = scheduler.now();
        if (!answer.reasoningOpen) {
          answer.reasoningOpen = true;
          publish(eventFrom('reasoning-started', run, now, { message_id: message }));
        }
        answer.reasoning += event.delta;
        publish(eventFrom('reasoning-delta', run, now, { message_id: message, delta: event.delta, cumulative: answer.reasoning }));
        break;
      }
      case 'tool-call': {
        // A provider may omit or repeat ids; tool_use blocks are matched by id, so keep them unique.
        const id = isUsableId(event.id) && !hasCall(answer, state.blocks, event.id) ? event.id : ids.next('call');
        const refused = refusalOf(answer, event.args);
        // Arguments refused are not kept: nothing past this point may walk them.
        const args = refused ? {} : event.args;
        const block: ToolCallBlock = { id: ids.next('block'), kind: 'tool_call', role: 'assistant', payload: { id, name: event.name, args } };
        answer.calls.push(refused ? { ...block, metadata: { refused } } : block);
        if (refused) (answer.refused ??= []).push({ id, name: event.name, error: refused });
        publish(eventFrom('tool-call-requested', run, scheduler.now(), { tool_call_id: id, name: event.name, args }));
        break;
      }
      case 'finished':
        answer.finished = event;
        break;
    }
    return answer;
  };
}

function answered(ports: InferencePorts, state: LoopState, answer: Answer, startedAt: number, message: string): LoopState {
  const { run } = state;
  const { publish, scheduler, ids } = ports;
  closeReasoning(ports, run, answer, message);
  const { text, reasoning, finished } = answer;
  const now = scheduler.now();
  publish(
    eventFrom('inference-finished', run, now, {
      message_id: message,
      text,
      model: finished?.model ?? engineOf(ports, run).model,
      usage: finished?.usage ?? { input_tokens: 0, output_tokens: 0 },
      stop_reason: finished?.stop_reason ?? null,
      duration_ms: now - startedAt,
    }),
  );
  const blocks = state.blocks.slice();
  if (reasoning) blocks.push({ id: ids.next('block'), kind: 'reasoning', role: 'assistant', payload: { text: reasoning } });
  if (text) blocks.push({ id: ids.next('block'), kind: 'llm_text', role: 'assistant', payload: { text } });
  for (const call of answer.calls) blocks.push(call);
  if (answer.refused) for (const refusal of answer.refused) blocks.push(refusedUse(ports, run, refusal, now, state.iteration + 1));
  return withAnswer(state, blocks);
}

/**
 * A refused call's result, published as an executed call's is: it ends the call, and the model sees why.
 * It says which inference refused it: after one whose every call was, the loop goes on (`refusedBy`).
 */
function refusedUse(ports: InferencePorts, run: LoopState['run'], { id, name, error }: NonNullable<Answer['refused']>[number], at: number, iteration: number): Block {
  ports.publish(eventFrom('tool-result', run, at, { tool_call_id: id, name, result: null, error }));
  ports.publish(eventFrom('tool-execution-finished', run, at, { tool_call_id: id, name }));
  return { id: `${id}:use`, kind: 'tool_use', role: 'tool', payload: { id, result: null, error }, metadata: { refused_by_inference: iteration } };
}

/** Whether the turn ends with calls the inference that made `state` refused as they came (see `refusalOf`). */
export const endsWithRefusals = (state: LoopState): boolean => state.blocks[state.blocks.length - 1]?.metadata?.['refused_by_inference'] === state.iteration;

function failed(ports: InferencePorts, state: LoopState, error: unknown, messageId: string): LoopState {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof EngineError && error.code ? { code: error.code } : {};
  ports.publish(eventFrom('inference-failed', state.run, ports.scheduler.now(), { message_id: messageId, message, ...code }));
  return endWith(withAnswer(state, state.blocks), { status: 'failed', error: message });
}
