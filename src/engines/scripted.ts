import { asyncScheduler, concat, concatMap, defer, from, ignoreElements, of, throwError, timer, type Observable, type SchedulerLike } from 'rxjs';
import { z } from 'zod';
import type { Block } from '../core/turns.js';
import { EngineError, type Engine, type EngineEvent, type InferenceRequest } from '../core/engine.js';

/** One scripted model answer (docs/protocol.md, Script file). */
export interface ScriptedResponse {
  /** Streamed first, as reasoning deltas (`llm.thinking.*` frames). */
  readonly reasoning?: string;
  readonly text?: string;
  readonly tool_calls?: readonly { readonly id?: string; readonly name: string; readonly arguments: unknown }[];
  readonly delay_ms?: number;
  readonly error?: string;
}

export interface Script {
  readonly responses: readonly ScriptedResponse[];
  readonly chunk_delay_ms?: number;
}

const scriptSchema = z.object({
  responses: z.array(
    z.object({
      reasoning: z.string().optional(),
      text: z.string().optional(),
      tool_calls: z.array(z.object({ id: z.string().optional(), name: z.string().min(1), arguments: z.unknown() })).optional(),
      delay_ms: z.number().nonnegative().optional(),
      error: z.string().optional(),
    }),
  ),
  chunk_delay_ms: z.number().nonnegative().optional(),
});

/** Checks a script file's content, with every offending field named. */
export function parseScript(value: unknown): Script {
  const parsed = scriptSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new TypeError(`invalid script: ${issues.join('; ')}`);
  }
  return parsed.data as Script;
}

export interface ScriptedEngineConfig {
  /** Timers for delays; virtual in marble tests. Default asyncScheduler. */
  readonly scheduler?: SchedulerLike;
  /** Model name reported on the final event. Default `scripted`. */
  readonly model?: string;
}

/** Splits text into word-sized deltas, so even a short answer streams in several. */
export function chunkText(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/** Rough characters of a block for the usage estimate; cheap, and never throws (a tool result may be anything). */
const blockSize = (block: Block): number => ('text' in block.payload ? block.payload.text.length : 64);

/**
 * An engine that plays a script: each inference takes the conversation's next response, in order
 * across its runs. Deterministic in real time and, with a TestScheduler, in virtual time.
 */
export function createScriptedEngine(script: Script, config: ScriptedEngineConfig = {}): Engine {
  const checked = parseScript(script);
  const scheduler = config.scheduler ?? asyncScheduler;
  const model = config.model ?? 'scripted';
  const chunkDelay = checked.chunk_delay_ms ?? 0;
  const cursors = new Map<string, number>();
  const playback: Playback = { scheduler, model, chunkDelay };

  return {
    name: 'scripted',
    model,
    forget: (convId) => {
      cursors.delete(convId);
    },
    // The state is the cursor alone: the script itself comes from the server's flags at each start.
    state: (convId) => {
      const cursor = cursors.get(convId);
      return cursor === undefined ? undefined : { cursor };
    },
    restore: (convId, state) => {
      const cursor = (state as { cursor?: unknown } | null)?.cursor;
      if (typeof cursor === 'number' && Number.isInteger(cursor) && cursor >= 0) cursors.set(convId, cursor);
    },
    infer: (request) =>
      defer(() => {
        const index = cursors.get(request.conv_id) ?? 0;
        const response = checked.responses[index];
        if (!response) {
          return throwError(
            () =>
              new EngineError(
                `the script is exhausted: it has ${checked.responses.length} responses and conversation ${request.conv_id} asked for #${index + 1}`,
                'script_exhausted',
              ),
          );
        }
        cursors.set(request.conv_id, index + 1);
        return play(playback, request, response, index);
      }),
  };
}

/** How a scripted engine plays its responses: its clock, its model name and the delay between chunks. */
interface Playback {
  readonly scheduler: SchedulerLike;
  readonly model: string;
  readonly chunkDelay: number;
}

const wait = (ms: number, scheduler: SchedulerLike): Observable<never> => (ms > 0 ? timer(ms, scheduler).pipe(ignoreElements()) : of());

/** One scripted response as engine events: its delay, its deltas (spaced by the chunk delay), its tool calls, then `finished`. */
function play(playback: Playback, request: InferenceRequest, response: ScriptedResponse, index: number): Observable<EngineEvent> {
  const { scheduler, model, chunkDelay } = playback;
  if (response.error !== undefined) {
    return concat(wait(response.delay_ms ?? 0, scheduler), throwError(() => new EngineError(response.error ?? 'scripted error', 'scripted_error')));
  }
  const text = response.text ?? '';
  const calls = response.tool_calls ?? [];
  const reasoning = response.reasoning ?? '';
  const deltas = [
    ...chunkText(reasoning).map((delta): EngineEvent => ({ type: 'reasoning-delta', delta })),
    ...chunkText(text).map((delta): EngineEvent => ({ type: 'text-delta', delta })),
  ];
  const input = request.blocks.reduce((sum, block) => sum + blockSize(block), 0);
  return concat(
    wait(response.delay_ms ?? 0, scheduler),
    from(deltas).pipe(concatMap((event, i) => (i === 0 ? of(event) : concat(wait(chunkDelay, scheduler), of(event))))),
    from(
      calls.map(
        (call, i): EngineEvent => ({ type: 'tool-call', id: call.id ?? `call_${index + 1}_${i + 1}`, name: call.name, args: call.arguments ?? {} }),
      ),
    ),
    of<EngineEvent>({
      type: 'finished',
      model,
      usage: { input_tokens: Math.ceil(input / 4), output_tokens: estimateTokens(reasoning + text) + calls.length * 8 },
      stop_reason: calls.length > 0 ? 'tool_calls' : 'stop',
    }),
  );
}
