import { marbles, type Context } from 'rxjs-marbles/jest';
import { asapScheduler, map, NEVER } from 'rxjs';
import { createSequentialIds, createStepController, type PauseRequest, type StepwiseEvent } from '../../src/index.js';
import { createProbe, labelOf } from './helpers.js';

function setup(config: Parameters<typeof createStepController>[1] = {}) {
  const published: StepwiseEvent[] = [];
  const controller = createStepController({ ids: createSequentialIds(), publish: (event) => published.push(event) }, config);
  const request = (session_id = 's1', overrides: Partial<PauseRequest> = {}): PauseRequest => ({
    conv_id: `conv-${session_id}`,
    session_id,
    inference_id: 'inf_1',
    turn_id: 'turn_1',
    phase: 'after_inference',
    summary: 'one call',
    tool_calls: [{ id: 'call_1', name: 'echo', input: { text: 'a' } }],
    ...overrides,
  });
  return { controller, published, request };
}

const reasonOf = map((resolution: { reason: string }) => resolution.reason);

/**
 * A controller whose two clocks log what they schedule: `deadlines.log` each pause's deadline timer,
 * `resumes.log` each hand-back of a resolution to its run.
 */
function setupClocked(m: Pick<Context, 'cold'>, config: Parameters<typeof createStepController>[1] = {}) {
  const deadlines = createProbe(m);
  const resumes = createProbe(m);
  const published: StepwiseEvent[] = [];
  const controller = createStepController(
    { ids: createSequentialIds(), publish: (event) => published.push(event), scheduler: deadlines.clock(), resumeScheduler: resumes.clock(asapScheduler) },
    config,
  );
  const { request } = setup();
  return { controller, published, request, deadlines, resumes };
}

describe('createStepController', () => {
  it('should release a wait when the pause is continued', marbles((m) => {
    const { controller, request } = setup();
    m.expect(controller.pause(request()).pipe(reasonOf)).toBeObservable('5ms (c|)', { c: 'continued' });
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1' }), 5);
  }));

  it('should publish paused before waiting and resumed once with its reason', marbles((m) => {
    const { controller, published, request } = setup();
    controller.pause(request()).subscribe();
    m.scheduler.schedule(() => {
      expect(published.map(labelOf)).toEqual(['paused:after_inference']);
      controller.submit({ pause_id: 'pause_1', by: 'alice' });
      expect(published.map(labelOf)).toEqual(['paused:after_inference', 'resumed:continued']);
      expect(published[1]).toMatchObject({ pause_id: 'pause_1', by: 'alice', at: 3 });
    }, 3);
    // The deadline timer went with the resolution: nothing more is published when it would have fired.
    m.scheduler.schedule(() => expect(published).toHaveLength(2), 31_000);
  }));

  it('should set the deadline to now plus the pause timeout', marbles((m) => {
    const { controller, request } = setup({ pauseTimeoutMs: 10_000 });
    m.scheduler.schedule(() => {
      controller.pause(request()).subscribe();
      expect(controller.get('pause_1')).toMatchObject({ deadline_ms: 7 + 10_000, phase: 'after_inference' });
    }, 7);
  }));

  it('should resolve at the deadline with the timeout action (continue by default)', marbles((m) => {
    const { controller, request } = setup();
    m.expect(controller.pause(request()).pipe(reasonOf)).toBeObservable('30s (t|)', { t: 'timeout' });
  }));

  it('should map the deny and abort timeout actions to decisions', marbles((m) => {
    const deny = setup({ pauseTimeoutMs: 1000, timeoutAction: 'deny' });
    const abort = setup({ pauseTimeoutMs: 1000, timeoutAction: 'abort' });
    const decision = map((resolution: { decision: { action: string } }) => resolution.decision.action);
    m.expect(deny.controller.pause(deny.request()).pipe(decision)).toBeObservable('1s (d|)', { d: 'deny' });
    m.expect(abort.controller.pause(abort.request()).pipe(decision)).toBeObservable('1s (a|)', { a: 'abort' });
  }));

  it('should release a wait when the run is cancelled, after which lookup fails', marbles((m) => {
    const { controller, published, request } = setup();
    // A run is cancelled by unsubscription (its loop is torn down): the pause resolves as cancelled.
    m.expect(controller.pause(request()).pipe(reasonOf), '^-!').toBeObservable('--');
    m.scheduler.schedule(() => {
      expect(published.map(labelOf)).toEqual(['paused:after_inference', 'resumed:cancelled']);
      expect(controller.get('pause_1')).toBeUndefined();
      const second = controller.submit({ pause_id: 'pause_1' });
      expect(second.ok || second.error.code).toBe('pause_resolved');
    }, 3);
  }));

  it('should hand the resolution back only after submit has returned', marbles((m) => {
    const { controller, request } = setup();
    const order: string[] = [];
    controller.pause(request()).subscribe((resolution) => order.push(`loop resumed: ${resolution.reason}`));
    m.scheduler.schedule(() => {
      controller.submit({ pause_id: 'pause_1' });
      order.push('submit returned');
    }, 2);
    m.flush();
    expect(order).toEqual(['submit returned', 'loop resumed: continued']);
  }));

  it('should know the conversation of a pause while pending and after it resolved', marbles((m) => {
    const { controller, request } = setup();
    controller.pause(request('s1')).subscribe();
    expect(controller.convOf('pause_1')).toBe('conv-s1');
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1' }), 1);
    m.scheduler.schedule(() => {
      expect(controller.get('pause_1')).toBeUndefined();
      expect(controller.convOf('pause_1')).toBe('conv-s1');
      expect(controller.convOf('nope')).toBeUndefined();
    }, 2);
  }));

  it('should resolve as cancelled when unsubscribed, leaving no timer', marbles((m) => {
    const { controller, published, request } = setup();
    m.expect(controller.pause(request()), '^--!').toBeObservable('---');
    m.scheduler.schedule(() => {
      expect(published.map(labelOf)).toEqual(['paused:after_inference', 'resumed:cancelled']);
      expect(controller.pending()).toEqual([]);
    }, 4);
  }));

  it('should drain every waiting pause of a session on disable and none of another', marbles((m) => {
    const { controller, request } = setup();
    controller.enable('s1');
    controller.enable('s2');
    m.expect(controller.pause(request('s1')).pipe(reasonOf)).toBeObservable('4ms (d|)', { d: 'disabled' });
    m.expect(controller.pause(request('s1')).pipe(reasonOf)).toBeObservable('4ms (d|)', { d: 'disabled' });
    m.expect(controller.pause(request('s2')).pipe(reasonOf)).toBeObservable('30s (t|)', { t: 'timeout' });
    m.scheduler.schedule(() => {
      expect(controller.disable('s1')).toBe(2);
      expect(controller.isEnabled('s1')).toBe(false);
      expect(controller.isEnabled('s2')).toBe(true);
    }, 4);
  }));

  it('should refuse an unknown pause and an already resolved one with distinct errors', marbles((m) => {
    const { controller, request } = setup();
    controller.pause(request()).subscribe();
    m.scheduler.schedule(() => {
      expect(controller.submit({ pause_id: 'nope' })).toMatchObject({ ok: false, error: { code: 'unknown_pause' } });
      expect(controller.submit({ pause_id: 'pause_1' })).toMatchObject({ ok: true, pause: { pause_id: 'pause_1' } });
      const again = controller.submit({ pause_id: 'pause_1' });
      expect(again).toMatchObject({ ok: false, error: { name: 'StepCommandError', code: 'pause_resolved', details: { reason: 'continued' } } });
    }, 1);
  }));

  it('should validate deny and edit commands without resolving the pause', marbles((m) => {
    const { controller, request } = setup();
    const validateEdit = (_id: string, args: unknown) => (typeof (args as { text?: unknown }).text === 'string' ? [] : ['text: expected string']);
    m.expect(controller.pause(request('s1', { validateEdit })).pipe(reasonOf)).toBeObservable('2ms (e|)', { e: 'edited' });
    m.scheduler.schedule(() => {
      expect(controller.submit({ pause_id: 'pause_1', action: 'deny', tool_call_ids: ['call_9'] })).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1: { text: 3 } } })).toMatchObject({
        ok: false,
        error: { code: 'invalid_arguments', details: { edits: { call_1: ['text: expected string'] } } },
      });
      expect(controller.submit({ pause_id: 'pause_1', action: 'edit', edits: {} })).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.pending()).toHaveLength(1);
    }, 1);
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1: { text: 'b' } } }), 2);
  }));

  it('should accept only continue after tools', marbles((m) => {
    const { controller, request } = setup();
    controller.pause(request('s1', { phase: 'after_tools', tool_calls: [] })).subscribe();
    m.scheduler.schedule(() => {
      expect(controller.submit({ pause_id: 'pause_1', action: 'deny', reason: 'no' })).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.submit({ pause_id: 'pause_1', action: 'continue' })).toMatchObject({ ok: true });
    }, 1);
  }));

  it('should list pending pauses per session', marbles((m) => {
    const { controller, request } = setup();
    controller.pause(request('s1')).subscribe();
    controller.pause(request('s2')).subscribe();
    expect(controller.pending('s1').map((pause) => pause.pause_id)).toEqual(['pause_1']);
    expect(controller.pending().map((pause) => pause.session_id)).toEqual(['s1', 's2']);
    m.expect(NEVER).toBeObservable('');
  }));

  it('should release the deadline timer when the pause is continued, and hand the resolution back once', marbles((m) => {
    const { controller, request, deadlines, resumes } = setupClocked(m);
    m.expect(controller.pause(request()).pipe(reasonOf)).toBeObservable('5ms (c|)', { c: 'continued' });
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1' }), 5);
    m.expect(deadlines.log).toHaveSubscriptions('^----!');
    m.expect(resumes.log).toHaveSubscriptions('-----(^!)');
  }));

  it('should release the deadline timer when it fires', marbles((m) => {
    const { controller, request, deadlines, resumes } = setupClocked(m, { pauseTimeoutMs: 1000 });
    m.expect(controller.pause(request()).pipe(reasonOf)).toBeObservable('1s (t|)', { t: 'timeout' });
    m.expect(deadlines.log).toHaveSubscriptions('^ 999ms !');
    m.expect(resumes.log).toHaveSubscriptions('1s (^!)');
  }));

  it('should release the deadline timer and hand nothing back when unsubscribed (cancelled)', marbles((m) => {
    const { controller, published, request, deadlines, resumes } = setupClocked(m);
    m.expect(controller.pause(request()).pipe(reasonOf), '^-!').toBeObservable('--');
    m.expect(deadlines.log).toHaveSubscriptions('^-!');
    m.expect(resumes.log).toHaveSubscriptions('--(^!)');
    m.flush();
    expect(published.map(labelOf)).toEqual(['paused:after_inference', 'resumed:cancelled']);
  }));

  it('should release the deadline timer when step mode is disabled', marbles((m) => {
    const { controller, request, deadlines } = setupClocked(m);
    controller.enable('s1');
    m.expect(controller.pause(request('s1')).pipe(reasonOf)).toBeObservable('3ms (d|)', { d: 'disabled' });
    m.scheduler.schedule(() => controller.disable('s1'), 3);
    m.expect(deadlines.log).toHaveSubscriptions('^--!');
  }));

  it('should leave no timer and no pending pause when its consumer errors on the resolution', marbles((m) => {
    const { controller, request, deadlines, resumes } = setupClocked(m);
    const failing = controller.pause(request()).pipe(
      map(() => {
        throw 'a bug downstream';
      }),
    );
    m.expect(failing).toBeObservable('2ms #', undefined, 'a bug downstream');
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1' }), 2);
    m.expect(deadlines.log).toHaveSubscriptions('^-!');
    m.expect(resumes.log).toHaveSubscriptions('--(^!)');
    m.flush();
    expect(controller.pending()).toEqual([]);
  }));

  it('should fail at factory time on bad options', () => {
    expect(() => setup({ pauseTimeoutMs: -1 })).toThrow(/pauseTimeoutMs/);
    expect(() => setup({ timeoutAction: 'explode' as never })).toThrow(/timeoutAction/);
  });

  it('should resolve a pause at its deadline even when recording or publishing the resolution throws, telling onError', marbles((m) => {
    const errors: unknown[] = [];
    const controller = createStepController(
      {
        ids: createSequentialIds(),
        scheduler: m.scheduler,
        resumeScheduler: m.scheduler,
        publish: (event) => {
          if (event.type === 'resumed') throw new RangeError('Maximum call stack size exceeded');
        },
        onResolved: () => {
          throw new Error('the store refused the record');
        },
        onError: (error) => errors.push((error as Error).message),
      },
      { pauseTimeoutMs: 30 },
    );
    const { request } = setup();
    // A deep `input` the digest could not take once: the deadline's timer threw out of the process.
    let deep: unknown = 1;
    for (let level = 0; level < 20_000; level += 1) deep = [deep];
    const pause$ = controller.pause(request('s1', { tool_calls: [{ id: 'call_1', name: 'echo', input: deep }] })).pipe(reasonOf);
    m.expect(pause$).toBeObservable('30ms (t|)', { t: 'timeout' });
    m.flush();
    expect(errors).toEqual(['the store refused the record', 'Maximum call stack size exceeded']);
    expect(controller.pending('s1')).toEqual([]);
  }));
});
