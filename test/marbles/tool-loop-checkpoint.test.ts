import { marbles, type Context } from 'rxjs-marbles/jest';
import { map, type Observable } from 'rxjs';
import { toolLoop, type BoundaryHook, type Engine, type EngineEvent, type LoopState } from '../../src/index.js';
import { createMemoryStore } from '../../src/store/memory.js';
import type { RunCheckpoint, Store } from '../../src/core/store.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { callEcho, createTestLoopPorts, createTestRuntime, FINISHED, loopState, toolOf } from './helpers.js';

const phases = map((state: LoopState) => state.outcome?.status ?? state.next ?? 'start');

/** A loop whose first inference asks for the `slow` tool and whose checkpoint port returns `barrier` before the tools. */
function barrierLoop(m: Pick<Context, 'cold'>, barrierMarbles: string) {
  const barrier = m.cold<never>(barrierMarbles, {}, new Error('the store is away'));
  const tool = m.cold('--(r|)', { r: 'done' });
  const answers = [
    m.cold<EngineEvent>('--(cf|)', { c: { type: 'tool-call', id: 'call_1', name: 'slow', args: {} }, f: FINISHED }),
    m.cold<EngineEvent>('--(f|)', { f: FINISHED }),
  ];
  let inferences = 0;
  const engine: Engine = { name: 'test', model: 'm-1', infer: () => answers[Math.min(inferences++, 1)] as Observable<EngineEvent> };
  const { ports } = createTestLoopPorts({ engine, tools: [toolOf('slow', tool)] });
  const onBoundary: BoundaryHook = (_state, next) => (next === 'tools' ? barrier : undefined);
  return { loop: toolLoop(ports, { onBoundary }), barrier, tool };
}

/**
 * A memory store that also records each checkpoint written and each one deleted, with the virtual
 * time, and the run's checkpoints as each decision left them.
 */
function recordingStore(now: () => number): { store: Store; log: string[]; checkpoints: RunCheckpoint[]; afterDecisions: Promise<RunCheckpoint[]>[] } {
  const store = createMemoryStore();
  const log: string[] = [];
  const checkpoints: RunCheckpoint[] = [];
  const afterDecisions: Promise<RunCheckpoint[]>[] = [];
  return {
    store: {
      ...store,
      recordDecision: (decision, resolved) => {
        log.push(`${now()}:decided`);
        store.recordDecision(decision, resolved);
        // The memory store reads its rows when called: this is the checkpoint as the decision left it.
        afterDecisions.push(store.checkpoints(decision.conv_id));
      },
      putCheckpoint: (checkpoint) => {
        log.push(`${now()}:${checkpoint.next}`);
        checkpoints.push(checkpoint);
        store.putCheckpoint(checkpoint);
      },
      deleteCheckpoint: (convId, inferenceId) => {
        log.push(`${now()}:end`);
        store.deleteCheckpoint(convId, inferenceId);
      },
    },
    log,
    checkpoints,
    afterDecisions,
  };
}

describe('toolLoop checkpoint port (onBoundary)', () => {
  it('should checkpoint each state with the phase that runs next, before it runs, and drop it when the run ends', marbles((m) => {
    const recorded = recordingStore(() => m.scheduler.now());
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, tool: createVirtualTool({ delayMs: 10 }), store: recorded.store });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }).result$.subscribe(), 0);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1' }), 5);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 20);
    m.flush();
    expect(recorded.log).toEqual(['0:inference', '0:after_inference', '5:decided', '5:tools', '15:after_tools', '20:decided', '20:inference', '20:end']);
    const atTools = recorded.checkpoints[2];
    expect(atTools).toMatchObject({ next: 'tools', iteration: 1, running_tool_call_ids: [expect.any(String)], decision: { action: 'continue' } });
  }));

  it("should keep a decision on the run's checkpoint from its commit until the run's next checkpoint, so a restart between them goes on as decided", marbles(async (m) => {
    const recorded = recordingStore(() => m.scheduler.now());
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, tool: createVirtualTool({ delayMs: 10 }), store: recorded.store });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }).result$.subscribe(), 0);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1', action: 'deny', reason: 'no' }), 5);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 20);
    m.flush();
    const [atFirst, atSecond] = await Promise.all(recorded.afterDecisions);
    expect(atFirst).toEqual([{ ...recorded.checkpoints[1], resolved: { pause_id: 'pause_1', decision: { action: 'deny', reason: 'no', args_digests: {} } } }]);
    expect(atSecond).toEqual([{ ...recorded.checkpoints[3], resolved: { pause_id: 'pause_2', decision: { action: 'continue' } } }]);
    // Each checkpoint the run wrote after a decision is its own, without it.
    expect(recorded.checkpoints.map((checkpoint) => checkpoint.resolved)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(await rt.sw.store.checkpoints('c1')).toEqual([]);
  }));

  it('should checkpoint inside a whole step too when step mode is off: a crash in its tools does not redo its inference', marbles((m) => {
    const recorded = recordingStore(() => m.scheduler.now());
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], tool: createVirtualTool({ delayMs: 10 }), store: recorded.store });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }).result$.subscribe(), 0);
    m.flush();
    expect(recorded.log).toEqual(['0:inference', '0:tools', '10:inference', '10:end']);
  }));

  it('should start the tools once the barrier completed, and unsubscribe from it then', marbles((m) => {
    const { loop, barrier, tool } = barrierLoop(m, '--|');
    const source = m.hot<LoopState>('-s|', { s: loopState() });
    m.expect(source.pipe(loop, phases)).toBeObservable('-s-a---b-(cz|)', { s: 'start', a: 'after_inference', b: 'after_tools', c: 'after_inference', z: 'completed' });
    m.expect(barrier).toHaveSubscriptions('---^-!');
    m.expect(tool).toHaveSubscriptions('-----^-!');
  }));

  it('should unsubscribe from a barrier that errors and end the run as failed before any tool starts', marbles((m) => {
    const { loop, barrier, tool } = barrierLoop(m, '--#');
    const source = m.hot<LoopState>('-s|', { s: loopState() });
    m.expect(source.pipe(loop, phases)).toBeObservable('-s-a-(f|)', { s: 'start', a: 'after_inference', f: 'failed' });
    m.expect(barrier).toHaveSubscriptions('---^-!');
    m.expect(tool).toHaveSubscriptions([]);
  }));

  it('should unsubscribe from a barrier still waiting when unsubscribed (cancelled), starting no tool', marbles((m) => {
    const { loop, barrier, tool } = barrierLoop(m, '-----|');
    const source = m.hot<LoopState>('-s-------|', { s: loopState() });
    m.expect(source.pipe(loop, phases), '^---!').toBeObservable('-s-a', { s: 'start', a: 'after_inference' });
    m.expect(source).toHaveSubscriptions('^---!');
    m.expect(barrier).toHaveSubscriptions('---^!');
    m.expect(tool).toHaveSubscriptions([]);
  }));
});
