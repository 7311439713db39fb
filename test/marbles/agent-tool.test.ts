import { marbles } from 'rxjs-marbles/jest';
import { z } from 'zod';
import { createScriptedEngine, defineAgentTool, type Engine, type PauseInfo, type RunResult, type StepwiseEvent, type Tool } from '../../src/index.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { createTestRuntime, recordingEngine, startAt, type TestRuntime } from './helpers.js';

/**
 * Agents inside agents (docs/protocol.md, Agents inside agents): an agent tool's call is a child run of the same
 * loop inside its parent's tools phase, in the root's conversation and stream, its pauses the conversation's.
 */

/** The `research` agent: its child asks for `echo` once, then answers `child says: <what echo returned>`. */
function researchAgent(stepMode: 'inherit' | 'off' = 'inherit', child: Engine = createScriptedEngine({ responses: [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'found it' }] })): Tool {
  return defineAgentTool({
    name: 'research',
    description: 'Hand a question to the research agent',
    parameters: z.object({ prompt: z.string() }),
    agent: { engine: child, stepMode },
  });
}

/** The root asks `research` once (call id `r1`), then answers. */
const ROOT_SCRIPT = [{ tool_calls: [{ id: 'r1', name: 'research', arguments: { prompt: 'find x' } }] }, { text: 'done' }];

function runtime(options: { agent?: Tool; stepMode?: boolean; maxAgentDepth?: number } = {}): TestRuntime {
  // The test runtime's echo tool, and the agent beside it.
  const tool = createVirtualTool();
  return createTestRuntime({
    responses: ROOT_SCRIPT,
    stepMode: options.stepMode ?? false,
    tool,
    tools: [tool, options.agent ?? researchAgent()],
    ...(options.maxAgentDepth === undefined ? {} : { maxAgentDepth: options.maxAgentDepth }),
  });
}

/** Each event as `type[:detail]@depth`, in hub order. */
const traced = (events: readonly StepwiseEvent[]): string[] =>
  events.map((event) => {
    const detail = event.type === 'run-ended' ? `:${event.status}` : event.type === 'tool-result' ? `:${event.name}=${JSON.stringify(event.result ?? event.error)}` : '';
    return `${event.type}${detail}@${event.depth ?? 0}`;
  });

/** Continues the session's one pending pause at each of the first `frames` frames of virtual time. */
function continueEachFrame(m: { scheduler: { schedule(work: () => void, delay: number): unknown } }, rt: TestRuntime, frames = 12): void {
  for (let frame = 1; frame <= frames; frame += 1) {
    m.scheduler.schedule(() => {
      const pending = rt.sw.controller.pending(rt.session.session_id);
      expect(pending.length).toBeLessThanOrEqual(1);
      if (pending[0]) expect(rt.sw.controller.submit({ pause_id: pending[0].pause_id }).ok).toBe(true);
    }, frame);
  }
}

/** Starts a run at frame 0 and continues each of its pauses a frame later; the pauses it made, and its result once flushed. */
function runContinuingEach(m: Parameters<typeof continueEachFrame>[0] & { flush(): void }, rt: TestRuntime): { pauses: PauseInfo[]; box: { result?: RunResult } } {
  const pauses: PauseInfo[] = [];
  rt.events$().subscribe((event) => {
    if (event.type === 'paused') pauses.push(event.pause);
  });
  const box = startAt(m, 0, () => rt.session.start({ prompt: 'go' }).result$);
  continueEachFrame(m, rt);
  m.flush();
  return { pauses, box };
}

describe('agent tools', () => {
  it('should run the child inside the call, in the root stream, and give its final text as the call result', () => {
    const rt = runtime();
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r));
    expect(result?.status).toBe('completed');
    expect(traced(events).filter((label) => /^(run-|tool-result)/.test(label))).toEqual([
      'run-started@0',
      'run-started@1',
      'tool-result:echo={"echoed":"x"}@1',
      'run-ended:completed@1',
      'tool-result:research="found it"@0',
      'run-ended:completed@0',
    ]);
    const root = events[0]?.inference_id;
    const childStart = events.find((event) => event.type === 'run-started' && event.depth === 1);
    expect(childStart).toMatchObject({ agent: 'research', parent: { inference_id: root, tool_call_id: 'r1' }, conv_id: 'c1' });
    expect(childStart?.inference_id).not.toBe(root);
    // The root's run-ended says what the tree used: its own inferences' tokens and its child's.
    const used = events.filter((event) => event.type === 'inference-finished').map((event) => (event.type === 'inference-finished' ? event.usage : undefined));
    expect(used).toHaveLength(4);
    const total = { input_tokens: used.reduce((sum, usage) => sum + (usage?.input_tokens ?? 0), 0), output_tokens: used.reduce((sum, usage) => sum + (usage?.output_tokens ?? 0), 0) };
    expect(total.output_tokens).toBeGreaterThan(0);
    expect(events.filter((event) => event.type === 'run-ended').map((event) => (event.type === 'run-ended' ? event.usage : undefined))).toEqual([undefined, total]);
    // Every child event names its run and parent; the root's name neither.
    for (const event of events) expect(event.depth === 1 ? event.parent?.tool_call_id : event.parent).toBe(event.depth === 1 ? 'r1' : undefined);
  });

  it('should pause the child with its depth and path when step mode is inherited, and go on when continued', marbles((m) => {
    const rt = runtime({ stepMode: true });
    const { pauses, box } = runContinuingEach(m, rt);
    expect(box.result?.status).toBe('completed');
    // The root's agent call, then the child's own two pauses, then the root's after_tools.
    expect(pauses.map((pause) => `${pause.phase}@${pause.depth ?? 0}`)).toEqual(['after_inference@0', 'after_inference@1', 'after_tools@1', 'after_tools@0']);
    const [root, child] = pauses as [PauseInfo, PauseInfo];
    expect(root.path).toBeUndefined();
    expect(child.path).toEqual([{ inference_id: root.inference_id, tool_call_id: 'r1', name: 'research' }]);
    expect(child.inference_id).not.toBe(root.inference_id);
    expect(child.tool_calls.map((call) => call.name)).toEqual(['echo']);
  }));

  it('should not pause a child whose step mode is off, while its parent still pauses', marbles((m) => {
    const rt = runtime({ stepMode: true, agent: researchAgent('off') });
    const { pauses, box } = runContinuingEach(m, rt);
    expect(box.result?.status).toBe('completed');
    expect(pauses.map((pause) => `${pause.phase}@${pause.depth ?? 0}`)).toEqual(['after_inference@0', 'after_tools@0']);
  }));

  it('should end the tree when the root is cancelled at a child pause: the pause cancelled, the child ended before the root', marbles((m) => {
    const rt = runtime({ stepMode: true });
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    const box = startAt(m, 0, () => rt.session.start({ prompt: 'go' }).result$);
    m.scheduler.schedule(() => {
      const [rootPause] = rt.sw.controller.pending(rt.session.session_id);
      rt.sw.controller.submit({ pause_id: (rootPause as PauseInfo).pause_id });
    }, 1);
    m.scheduler.schedule(() => {
      const [childPause] = rt.sw.controller.pending(rt.session.session_id);
      expect(childPause?.depth).toBe(1);
      rt.session.cancel();
    }, 2);
    m.flush();
    expect(box.result?.status).toBe('cancelled');
    expect(traced(events).filter((label) => /^(resumed|run-ended)/.test(label)).slice(-3)).toEqual(['resumed@1', 'run-ended:cancelled@1', 'run-ended:cancelled@0']);
    expect(rt.sw.controller.pending(rt.session.session_id)).toEqual([]);
  }));

  it('should start no child when the agent call is denied, and start it with edited arguments when edited', marbles((m) => {
    const denied = runtime({ stepMode: true });
    const child = recordingEngine([{ text: 'found y' }]);
    const edited = runtime({ stepMode: true, agent: researchAgent('inherit', child.engine) });
    const seen = { denied: [] as StepwiseEvent[], edited: [] as StepwiseEvent[] };
    denied.events$().subscribe((event) => seen.denied.push(event));
    edited.events$().subscribe((event) => seen.edited.push(event));
    const boxes = [startAt(m, 0, () => denied.session.start({ prompt: 'go' }).result$), startAt(m, 0, () => edited.session.start({ prompt: 'go' }).result$)];
    m.scheduler.schedule(() => {
      const [first] = denied.sw.controller.pending(denied.session.session_id);
      denied.sw.controller.submit({ pause_id: (first as PauseInfo).pause_id, action: 'deny', reason: 'not now' });
      const [other] = edited.sw.controller.pending(edited.session.session_id);
      edited.sw.controller.submit({ pause_id: (other as PauseInfo).pause_id, action: 'edit', edits: { r1: { prompt: 'find y' } } });
    }, 1);
    continueEachFrame(m, denied);
    continueEachFrame(m, edited);
    m.flush();
    expect(boxes.map((box) => box.result?.status)).toEqual(['completed', 'completed']);
    expect(seen.denied.filter((event) => event.type === 'run-started')).toHaveLength(1);
    expect(seen.denied.find((event) => event.type === 'tool-result' && event.name === 'research')).toMatchObject({ error: 'denied by operator: not now' });
    // The child's prompt is the edited argument; its answer is the call's result.
    expect(child.requests[0]?.blocks.filter((block) => block.kind === 'user').map((block) => block.payload)).toEqual([{ text: 'find y' }]);
    expect(seen.edited.find((event) => event.type === 'tool-result' && event.name === 'research')).toMatchObject({ result: 'found y' });
  }));

  it('should run two agent calls of one answer in parallel, their children pausing and going on independently', marbles((m) => {
    const tool = createVirtualTool();
    const rt = createTestRuntime({
      responses: [
        { tool_calls: [{ id: 'r1', name: 'research', arguments: { prompt: 'one' } }, { id: 'r2', name: 'research', arguments: { prompt: 'two' } }] },
        { text: 'done' },
      ],
      stepMode: true,
      tool,
      // Both children share the conversation's script: each takes the next response as it infers.
      tools: [
        tool,
        researchAgent(
          'inherit',
          createScriptedEngine({ responses: [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] }, { tool_calls: [{ id: 'c2', name: 'echo', arguments: { text: 'b' } }] }, { text: 'one' }, { text: 'two' }] }),
        ),
      ],
    });
    const pauses: PauseInfo[] = [];
    rt.events$().subscribe((event) => {
      if (event.type === 'paused') pauses.push(event.pause);
    });
    const box = startAt(m, 0, () => rt.session.start({ prompt: 'go' }).result$);
    const { controller } = rt.sw;
    // The root's pause; then both children wait at once, each answered on its own.
    m.scheduler.schedule(() => controller.submit({ pause_id: (controller.pending(rt.session.session_id)[0] as PauseInfo).pause_id }), 1);
    m.scheduler.schedule(() => {
      const children = controller.pending(rt.session.session_id);
      expect(children.map((pause) => pause.path?.[0]?.tool_call_id).sort()).toEqual(['r1', 'r2']);
      const second = children.find((pause) => pause.path?.[0]?.tool_call_id === 'r2') as PauseInfo;
      expect(controller.submit({ pause_id: second.pause_id }).ok).toBe(true);
    }, 2);
    m.scheduler.schedule(() => {
      const [first] = controller.pending(rt.session.session_id);
      expect(first?.path?.[0]?.tool_call_id).toBe('r1');
      controller.submit({ pause_id: (first as PauseInfo).pause_id });
    }, 3);
    // Then every pause as it comes, however many wait at once.
    for (let frame = 4; frame <= 20; frame += 1) {
      m.scheduler.schedule(() => {
        for (const pause of controller.pending(rt.session.session_id)) controller.submit({ pause_id: pause.pause_id });
      }, frame);
    }
    m.flush();
    expect(box.result?.status).toBe('completed');
    expect(pauses.filter((pause) => pause.depth === 1).map((pause) => `${pause.phase}:${pause.path?.[0]?.tool_call_id}`).sort()).toEqual([
      'after_inference:r1',
      'after_inference:r2',
      'after_tools:r1',
      'after_tools:r2',
    ]);
    const results = box.result?.turn.blocks.filter((block) => block.kind === 'tool_use').map((block) => block.payload);
    expect(results?.map((payload) => (payload as { id: string }).id)).toEqual(['r1', 'r2']);
  }));

  it('should answer a call past the depth limit with an error and start no run', () => {
    const rt = runtime({ maxAgentDepth: 0 });
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r));
    expect(result?.status).toBe('completed');
    expect(events.filter((event) => event.type === 'run-started')).toHaveLength(1);
    const research = events.find((event) => event.type === 'tool-result' && event.name === 'research');
    expect(research).toMatchObject({ result: null, error: expect.stringContaining('max agent depth') });
  });

  it('should give the call an error saying how a failed child ended', () => {
    const failing = researchAgent('inherit', createScriptedEngine({ responses: [{ error: 'upstream down' }] }));
    const rt = runtime({ agent: failing });
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r));
    expect(result?.status).toBe('completed');
    const research = events.find((event) => event.type === 'tool-result' && event.name === 'research');
    expect(research).toMatchObject({ result: null, error: expect.stringMatching(/^agent "research" ended failed: .*upstream down/) });
  });
});
