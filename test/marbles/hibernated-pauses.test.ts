import { marbles, type Context } from 'rxjs-marbles/jest';
import { asapScheduler, type Subscription, type Unsubscribable } from 'rxjs';
import { createSequentialIds, createStepController, type PauseInfo, type PauseRequest, type PauseResolution, type StepwiseEvent } from '../../src/index.js';
import type { PauseChecks } from '../../src/streams/controller-settings.js';
import { createProbe, labelOf } from './helpers.js';

/**
 * A controller that hibernates every pause still pending after 2s: the run waiting at it is
 * unsubscribed (as the session does), and each wake is logged with the time it came.
 */
function setup(m: Pick<Context, 'cold'>, config: Parameters<typeof createStepController>[1] = {}) {
  const published: StepwiseEvent[] = [];
  const told: string[] = [];
  const woken: Array<{ at: number; resolution: PauseResolution }> = [];
  const held = new Map<string, Unsubscribable>();
  const resumes = createProbe(m);
  const clock = resumes.clock(asapScheduler);
  const runs = new Map<string, Subscription>();
  const controller = createStepController(
    {
      ids: createSequentialIds(),
      publish: (event) => published.push(event),
      resumeScheduler: clock,
      hibernate: (pause) => {
        told.push(pause.pause_id);
        const pause$ = controller.hibernate?.(pause.pause_id, (resolution) => woken.push({ at: clock.now(), resolution }));
        if (pause$) held.set(pause.pause_id, pause$);
        // The run leaves memory: its subscription to the pause goes, and the pause stays pending.
        runs.get(pause.pause_id)?.unsubscribe();
      },
    },
    { hibernateAfterMs: 2000, ...config },
  );
  const request = (session_id = 's1', overrides: Partial<PauseRequest> = {}): PauseRequest => ({
    conv_id: `conv-${session_id}`,
    session_id,
    inference_id: `inf-${session_id}`,
    turn_id: 'turn_1',
    phase: 'after_inference',
    summary: 'one call',
    tool_calls: [{ id: 'call_1', name: 'echo', input: { text: 'a' } }],
    validateEdit: (_id, args) => (typeof (args as { text?: unknown }).text === 'string' ? [] : ['text must be a string']),
    ...overrides,
  });
  const emitted: PauseResolution[] = [];
  /** A run pausing: its subscription is what hibernation drops. */
  const pause = (pauseId: string, req = request()): void => {
    runs.set(pauseId, controller.pause(req).subscribe((resolution) => emitted.push(resolution)));
  };
  return { controller, published, told, woken, held, pause, emitted, request, resumes };
}

const labels = (published: readonly StepwiseEvent[]): string[] => published.map(labelOf);

describe('hibernated pauses (createStepController with hibernateAfterMs)', () => {
  it('should tell the hibernate port of a pause still pending after hibernateAfterMs, and keep it pending for everyone', marbles((m) => {
    const { controller, published, told, pause } = setup(m);
    pause('pause_1');
    m.scheduler.schedule(() => expect(told).toEqual([]), 1999);
    m.scheduler.schedule(() => {
      expect(told).toEqual(['pause_1']);
      // The run was unsubscribed, and yet: pending, listed, its conversation known, nothing published.
      expect(controller.get('pause_1')).toMatchObject({ pause_id: 'pause_1', deadline_ms: 30_000 });
      expect(controller.pending('s1').map((info) => info.pause_id)).toEqual(['pause_1']);
      expect(controller.convOf('pause_1')).toBe('conv-s1');
      expect(labels(published)).toEqual(['paused:after_inference']);
    }, 2000);
  }));

  it('should not hibernate a pause resolved before, nor one whose deadline comes first', marbles((m) => {
    const early = setup(m);
    early.pause('pause_1');
    m.scheduler.schedule(() => early.controller.submit({ pause_id: 'pause_1' }), 1000);
    const short = setup(m, { pauseTimeoutMs: 1500 });
    short.pause('pause_1');
    m.scheduler.schedule(() => {
      expect(early.told).toEqual([]);
      expect(short.told).toEqual([]);
      expect(labels(short.published)).toEqual(['paused:after_inference', 'resumed:timeout']);
    }, 5000);
  }));

  it('should wake on a continue after submit returned, with resumed published as for a resident pause', marbles((m) => {
    const { controller, published, woken, pause, emitted, resumes } = setup(m);
    pause('pause_1');
    m.scheduler.schedule(() => {
      expect(controller.submit({ pause_id: 'pause_1', by: 'alice' })).toMatchObject({ ok: true, pause: { pause_id: 'pause_1' } });
      expect(woken).toEqual([]);
      expect(labels(published)).toEqual(['paused:after_inference', 'resumed:continued']);
      expect(published[1]).toMatchObject({ pause_id: 'pause_1', by: 'alice', at: 5000 });
      expect(controller.get('pause_1')).toBeUndefined();
      expect(controller.submit({ pause_id: 'pause_1' })).toMatchObject({ ok: false, error: { code: 'pause_resolved' } });
    }, 5000);
    // The hand-back: scheduled as the pause resolved, run right after, on the resume scheduler.
    m.expect(resumes.log).toHaveSubscriptions('5000ms (^!)');
    m.scheduler.schedule(() => {
      expect(woken).toMatchObject([{ at: 5000, resolution: { reason: 'continued', decision: { action: 'continue' }, by: 'alice' } }]);
      // The unsubscribed run gets nothing.
      expect(emitted).toEqual([]);
    }, 5001);
  }));

  it('should validate deny and edit as before and wake with the decision', marbles((m) => {
    const { controller, woken, pause } = setup(m);
    pause('pause_1');
    m.scheduler.schedule(() => {
      expect(controller.submit({ pause_id: 'pause_1', action: 'deny', tool_call_ids: ['call_9'] })).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1: { text: 3 } } })).toMatchObject({
        ok: false,
        error: { code: 'invalid_arguments', details: { edits: { call_1: ['text must be a string'] } } },
      });
      expect(controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1: { text: 'b' } } })).toMatchObject({ ok: true });
    }, 3000);
    m.scheduler.schedule(() => expect(woken).toMatchObject([{ resolution: { reason: 'edited', decision: { action: 'edit' } } }]), 3001);
  }));

  it('should wake at the deadline with the timeout action, from the one index', marbles((m) => {
    const { published, woken, pause } = setup(m, { pauseTimeoutMs: 10_000, timeoutAction: 'abort' });
    pause('pause_1');
    m.scheduler.schedule(() => {
      expect(labels(published)).toEqual(['paused:after_inference', 'resumed:timeout']);
      expect(published[1]).toMatchObject({ by: 'system', at: 10_000 });
      expect(woken).toMatchObject([{ at: 10_000, resolution: { reason: 'timeout', decision: { action: 'abort' }, by: 'system' } }]);
    }, 10_001);
  }));

  it('should wake on disable, keeping a pause a tool asked for', marbles((m) => {
    const { controller, woken, pause, request, published } = setup(m);
    pause('pause_1', request('s1'));
    pause('pause_2', request('s1', { inference_id: 'inf-b', tool_calls: [{ id: 'call_2', name: 'rm', input: {}, breakpoint: true }] }));
    m.scheduler.schedule(() => expect(controller.disable('s1')).toBe(1), 4000);
    m.scheduler.schedule(() => {
      expect(woken).toMatchObject([{ resolution: { pause: { pause_id: 'pause_1' }, reason: 'disabled', by: 'system' } }]);
      expect(controller.pending('s1').map((info) => info.pause_id)).toEqual(['pause_2']);
      expect(labels(published)).toEqual(['paused:after_inference', 'paused:after_inference', 'resumed:disabled']);
    }, 4001);
  }));

  it('should resolve as cancelled and wake nothing when the hibernated run is cancelled', marbles((m) => {
    const { controller, published, woken, held, pause } = setup(m);
    pause('pause_1');
    m.scheduler.schedule(() => held.get('pause_1')?.unsubscribe(), 3000);
    m.scheduler.schedule(() => {
      expect(labels(published)).toEqual(['paused:after_inference', 'resumed:cancelled']);
      expect(controller.get('pause_1')).toBeUndefined();
      expect(woken).toEqual([]);
    }, 40_000);
  }));

  it('should drop a pending wake when the run is cancelled between the resolution and the wake', marbles((m) => {
    const { controller, published, woken, held, pause } = setup(m);
    pause('pause_1');
    m.scheduler.schedule(() => {
      controller.submit({ pause_id: 'pause_1' });
      held.get('pause_1')?.unsubscribe();
    }, 3000);
    m.scheduler.schedule(() => {
      expect(labels(published)).toEqual(['paused:after_inference', 'resumed:continued']);
      expect(woken).toEqual([]);
    }, 3001);
  }));

  it('should publish the same frames for a hibernated pause as for a resident one', marbles((m) => {
    const resident = setup(m, { hibernateAfterMs: 60_000 });
    const hibernated = setup(m);
    for (const { pause } of [resident, hibernated]) pause('pause_1');
    m.scheduler.schedule(() => {
      for (const { controller } of [resident, hibernated]) controller.submit({ pause_id: 'pause_1', action: 'deny', reason: 'no', by: 'bob' });
    }, 7000);
    m.scheduler.schedule(() => {
      expect(hibernated.told).toEqual(['pause_1']);
      expect(hibernated.published).toEqual(resident.published);
      expect(hibernated.woken.map((wake) => wake.resolution)).toEqual(resident.emitted);
    }, 7001);
  }));

  it('should fail at factory time on a bad hibernateAfterMs', () => {
    expect(() => createStepController({ ids: createSequentialIds(), publish: () => undefined }, { hibernateAfterMs: -1 })).toThrow(/hibernateAfterMs/);
  });
});

/** A stored pause as recovery gives it to `restoreHibernated`: its id and deadline kept. */
const storedPause = (deadline_ms: number): PauseInfo => ({
  pause_id: 'pause_9',
  phase: 'after_inference',
  summary: 'one call',
  deadline_ms,
  conv_id: 'conv-s1',
  session_id: 's1',
  inference_id: 'inf-s1',
  turn_id: 'turn_1',
  tool_calls: [{ id: 'call_1', name: 'echo', input: { text: 'a' } }],
});

const checks: PauseChecks = {
  validateEdit: (_id, args) => (typeof (args as { text?: unknown }).text === 'string' ? [] : ['text must be a string']),
  validateAnswer: undefined,
  results: {},
};

describe('pauses restored hibernated (StepController.restoreHibernated)', () => {
  it('should make the stored pause pending with its id and deadline, publish it as restored, and wake at its deadline', marbles((m) => {
    const { controller, published, woken, told } = setup(m, { timeoutAction: 'deny' });
    m.scheduler.schedule(() => {
      const wake = (resolution: PauseResolution): number => woken.push({ at: m.scheduler.now(), resolution });
      expect(controller.restoreHibernated?.(storedPause(5000), checks, wake)).toBeDefined();
      // A second restore of a pending pause is refused: its caller restores the run another way.
      expect(controller.restoreHibernated?.(storedPause(5000), checks, wake)).toBeUndefined();
      expect(controller.get('pause_9')).toMatchObject({ pause_id: 'pause_9', deadline_ms: 5000 });
      expect(published).toMatchObject([{ type: 'paused', restored: true, at: 100, pause: { pause_id: 'pause_9' } }]);
    }, 100);
    m.scheduler.schedule(() => expect(woken).toEqual([]), 4999);
    m.scheduler.schedule(() => {
      expect(labels(published)).toEqual(['paused:after_inference', 'resumed:timeout']);
      expect(woken).toMatchObject([{ at: 5000, resolution: { reason: 'timeout', decision: { action: 'deny' } } }]);
      // Never hibernated again: no run holds it.
      expect(told).toEqual([]);
    }, 5001);
  }));

  it('should check commands with the checks it was given and wake with the decision', marbles((m) => {
    const { controller, woken } = setup(m);
    m.scheduler.schedule(() => {
      controller.restoreHibernated?.(storedPause(60_000), checks, (resolution) => woken.push({ at: m.scheduler.now(), resolution }));
      expect(controller.submit({ pause_id: 'pause_9', action: 'edit', edits: { call_1: { text: 3 } } })).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
      expect(controller.submit({ pause_id: 'pause_9', action: 'edit', edits: { call_1: { text: 'b' } } })).toMatchObject({ ok: true });
      expect(woken).toEqual([]);
    }, 10);
    m.scheduler.schedule(() => expect(woken).toMatchObject([{ at: 10, resolution: { reason: 'edited' } }]), 11);
  }));

  it('should resolve a deadline that passed while the server was down at once, and resolve cancelled with no wake when dropped', marbles((m) => {
    const { controller, published, woken } = setup(m);
    m.scheduler.schedule(() => {
      controller.restoreHibernated?.(storedPause(50), checks, (resolution) => woken.push({ at: m.scheduler.now(), resolution }));
    }, 100);
    m.scheduler.schedule(() => expect(woken).toMatchObject([{ at: 100, resolution: { reason: 'timeout' } }]), 101);
    const dropped = setup(m);
    m.scheduler.schedule(() => dropped.controller.restoreHibernated?.(storedPause(60_000), checks, (resolution) => dropped.woken.push({ at: 0, resolution }))?.unsubscribe(), 10);
    m.scheduler.schedule(() => {
      expect(labels(dropped.published)).toEqual(['paused:after_inference', 'resumed:cancelled']);
      expect(dropped.woken).toEqual([]);
      expect(labels(published)).toEqual(['paused:after_inference', 'resumed:timeout']);
    }, 200);
  }));
});
