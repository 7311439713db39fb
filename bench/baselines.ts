import { concatMap, EMPTY, expand, from, last, map, of, toArray, type Observable } from 'rxjs';
import type { Block, Engine, EngineEvent, InferenceRequest, Tool } from '../src/index.js';

/**
 * The two reference loops of README.md, Benchmarks: the least a tool-calling loop can do over the same Engine port
 * and tool as stepwise. Both send the whole transcript and the tool spec on every inference (as the
 * scripted engine's input-token estimate reads it), validate the arguments and run the tool, and
 * append the same blocks; neither publishes events, keeps sequence numbers or has pause points.
 */

interface BareState {
  readonly blocks: readonly Block[];
  readonly iteration: number;
  readonly done: boolean;
}

type ToolCallEvent = Extract<EngineEvent, { type: 'tool-call' }>;

function requestOf(convId: string, tool: Tool, blocks: readonly Block[]): InferenceRequest {
  return {
    conv_id: convId,
    session_id: convId,
    inference_id: convId,
    turn_id: convId,
    blocks,
    tools: [{ name: tool.name, description: tool.description, parameters: tool.parameters }],
  };
}

/** The model's answer as blocks: its text, then its tool calls. */
function answerBlocks(events: readonly EngineEvent[], iteration: number): { blocks: Block[]; calls: ToolCallEvent[] } {
  let text = '';
  const calls: ToolCallEvent[] = [];
  for (const event of events) {
    if (event.type === 'text-delta') text += event.delta;
    else if (event.type === 'tool-call') calls.push(event);
  }
  const blocks: Block[] = text ? [{ id: `t${iteration}`, kind: 'llm_text', role: 'assistant', payload: { text } }] : [];
  for (const call of calls) {
    blocks.push({ id: `c${call.id}`, kind: 'tool_call', role: 'assistant', payload: { id: call.id, name: call.name, args: call.args } });
  }
  return { blocks, calls };
}

/** Validates and runs one call the way any loop must; the tool here is synchronous. */
function runTool(tool: Tool, call: ToolCallEvent, signal: AbortSignal): Block {
  const validation = tool.validate(call.args);
  const result = validation.ok ? tool.execute(validation.value, { signal, tool_call_id: call.id }) : null;
  const error = validation.ok ? {} : { error: validation.issues.join('; ') };
  return { id: `u${call.id}`, kind: 'tool_use', role: 'tool', payload: { id: call.id, result, ...error } };
}

/** A bare RxJS `expand` loop: inference, tools, again; resolves with the number of inferences. */
export function runBareRxLoop(engine: Engine, tool: Tool, convId: string, maxIterations: number): Observable<number> {
  const signal = new AbortController().signal;
  const initial: BareState = { blocks: [{ id: 'u', kind: 'user', role: 'user', payload: { text: 'go' } }], iteration: 0, done: false };
  return of(initial).pipe(
    expand((state) =>
      state.done || state.iteration >= maxIterations
        ? EMPTY
        : engine.infer(requestOf(convId, tool, state.blocks)).pipe(
            toArray(),
            map((events): BareState => {
              const { blocks, calls } = answerBlocks(events, state.iteration);
              const uses = calls.map((call) => runTool(tool, call, signal));
              return { blocks: [...state.blocks, ...blocks, ...uses], iteration: state.iteration + 1, done: calls.length === 0 };
            }),
          ),
    ),
    last(),
    map((state) => state.iteration),
  );
}

/** Validates and runs one call whose tool answers with a Promise (the realistic case). */
async function runToolAsync(tool: Tool, call: ToolCallEvent, signal: AbortSignal): Promise<Block> {
  const validation = tool.validate(call.args);
  const result: unknown = validation.ok ? await tool.execute(validation.value, { signal, tool_call_id: call.id }) : null;
  const error = validation.ok ? {} : { error: validation.issues.join('; ') };
  return { id: `u${call.id}`, kind: 'tool_use', role: 'tool', payload: { id: call.id, result, ...error } };
}

/**
 * The bare RxJS `expand` loop over an async tool (README.md, Benchmarks: `loop_step_realistic`'s baseline): the same
 * zod parse and the same awaited tool call, its results awaited together; resolves with the number
 * of inferences.
 */
export function runBareRxLoopAsync(engine: Engine, tool: Tool, convId: string, maxIterations: number): Observable<number> {
  const signal = new AbortController().signal;
  const initial: BareState = { blocks: [{ id: 'u', kind: 'user', role: 'user', payload: { text: 'go' } }], iteration: 0, done: false };
  return of(initial).pipe(
    expand((state) =>
      state.done || state.iteration >= maxIterations
        ? EMPTY
        : engine.infer(requestOf(convId, tool, state.blocks)).pipe(
            toArray(),
            concatMap((events) => {
              const { blocks, calls } = answerBlocks(events, state.iteration);
              return from(Promise.all(calls.map((call) => runToolAsync(tool, call, signal)))).pipe(
                map((uses): BareState => ({ blocks: [...state.blocks, ...blocks, ...uses], iteration: state.iteration + 1, done: calls.length === 0 })),
              );
            }),
          ),
    ),
    last(),
    map((state) => state.iteration),
  );
}

/** Collects one inference's events: the plain loop consumes the Observable port the simplest way. */
function collect(events$: Observable<EngineEvent>): Promise<EngineEvent[]> {
  return new Promise((resolve, reject) => {
    const events: EngineEvent[] = [];
    events$.subscribe({ next: (event) => events.push(event), error: reject, complete: () => resolve(events) });
  });
}

/** A plain async/await loop; resolves with the number of inferences. */
export async function runPlainLoop(engine: Engine, tool: Tool, convId: string, maxIterations: number): Promise<number> {
  const signal = new AbortController().signal;
  let blocks: Block[] = [{ id: 'u', kind: 'user', role: 'user', payload: { text: 'go' } }];
  let iteration = 0;
  while (iteration < maxIterations) {
    const events = await collect(engine.infer(requestOf(convId, tool, blocks)));
    const answer = answerBlocks(events, iteration);
    iteration += 1;
    const uses: Block[] = [];
    // Tools may be async in general, so a plain loop awaits each result.
    for (const call of answer.calls) uses.push(await runTool(tool, call, signal));
    blocks = [...blocks, ...answer.blocks, ...uses];
    if (answer.calls.length === 0) break;
  }
  return iteration;
}
