import { marbles } from 'rxjs-marbles/jest';
import { createMemoryStore } from '../../src/store/memory.js';
import type { RunCheckpoint, Store } from '../../src/core/store.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { callEcho, createTestRuntime } from './helpers.js';

/** A memory store that also records each checkpoint written and each one deleted, with the virtual time. */
function recordingStore(now: () => number): { store: Store; log: string[]; checkpoints: RunCheckpoint[] } {
  const store = createMemoryStore();
  const log: string[] = [];
  const checkpoints: RunCheckpoint[] = [];
  return {
    store: {
      ...store,
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
    expect(recorded.log).toEqual(['0:inference', '0:after_inference', '5:tools', '15:after_tools', '20:inference', '20:end']);
    const atTools = recorded.checkpoints[2];
    expect(atTools).toMatchObject({ next: 'tools', iteration: 1, running_tool_call_ids: [expect.any(String)], decision: { action: 'continue' } });
  }));

  it('should checkpoint inside a whole step too when step mode is off: a crash in its tools does not redo its inference', marbles((m) => {
    const recorded = recordingStore(() => m.scheduler.now());
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], tool: createVirtualTool({ delayMs: 10 }), store: recorded.store });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }).result$.subscribe(), 0);
    m.flush();
    expect(recorded.log).toEqual(['0:inference', '0:tools', '10:inference', '10:end']);
  }));
});
