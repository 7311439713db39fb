import { marbles } from 'rxjs-marbles/jest';
import { SessionClosedError } from '../../src/index.js';
import { callEcho, createTestRuntime } from './helpers.js';

const ids = (rt: ReturnType<typeof createTestRuntime>): string[] => rt.sw.sessions.list().map((s) => s.conv_id);

describe('createStepwise retention', () => {
  it('should close a session idleMs after its run ended, and free its buffered events', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'one', delay_ms: 5 }], retention: { idleMs: 100 } });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    // The run ends at 5, so the session goes at 105 (checks scheduled up front run first in their frame).
    m.scheduler.schedule(() => {
      expect(ids(rt)).toEqual(['c1']);
      expect(rt.sw.hub.lastSeq('c1')).toBeGreaterThan(0);
    }, 104);
    m.scheduler.schedule(() => {
      expect(ids(rt)).toEqual([]);
      expect(rt.sw.hub.lastSeq('c1')).toBe(0);
    }, 106);
  }));

  it('should count idle time from creation for a session that never ran, and restart it with each run', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'one' }], retention: { idleMs: 50 } });
    m.scheduler.schedule(() => rt.sw.sessions.open({ conv_id: 'never' }), 10);
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 40);
    // `never` goes at 60; c1's run (at 40) restarted its clock, so it goes at 90.
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1', 'never']), 59);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1']), 61);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1']), 89);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual([]), 91);
  }));

  it('should never close a paused session, however long it waits', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, pauseTimeoutMs: 1000, retention: { idleMs: 10 } });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.scheduler.schedule(() => {
      expect(rt.sw.controller.pending()).toHaveLength(1);
      expect(ids(rt)).toEqual(['c1']);
    }, 999);
    // Both pauses time out (at 1000 and 2000); the run ends at 2000 and the session goes 10 ms later.
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1']), 2009);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual([]), 2011);
  }));

  it('should close the longest idle sessions beyond maxSessions, never a running one nor the one just opened', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'slow', delay_ms: 100 }], retention: { maxSessions: 3 } });
    const { sessions } = rt.sw;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.scheduler.schedule(() => sessions.open({ conv_id: 'a' }), 1);
    m.scheduler.schedule(() => sessions.open({ conv_id: 'b' }), 2);
    // Four sessions: the longest idle one (a) goes; c1 is running and stays.
    m.scheduler.schedule(() => sessions.open({ conv_id: 'c' }), 3);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1', 'b', 'c']), 4);
    m.scheduler.schedule(() => sessions.open({ conv_id: 'd' }), 5);
    m.scheduler.schedule(() => sessions.open({ conv_id: 'e' }), 6);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1', 'd', 'e']), 7);
  }));

  it('should never close the session it is opening, even when every other one is busy', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'slow', delay_ms: 100 }, { text: 'x' }], retention: { maxSessions: 1 } });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.scheduler.schedule(() => {
      const opened = rt.sw.sessions.open({ conv_id: 'new' });
      expect(ids(rt)).toEqual(['c1', 'new']);
      opened.start({ prompt: 'hi' });
    }, 1);
    // c1's run ends at 100: the longest idle session then is c1 itself, and one is the limit.
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['new']), 101);
  }));

  it('should not close a session someone watches live, and close it once they stop', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'one' }], retention: { idleMs: 10, maxSessions: 1 } });
    const watching = rt.sw.hub.conversation$('c1').subscribe();
    m.scheduler.schedule(() => rt.sw.sessions.open({ conv_id: 'other' }), 1);
    // Over the limit, but c1 is watched: `other`, the only closable one, is kept as the one just opened.
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1', 'other']), 2);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1']), 12);
    m.scheduler.schedule(() => watching.unsubscribe(), 15);
    // c1's idle clock started over at 10 (watched then), so it goes at 20.
    m.scheduler.schedule(() => expect(ids(rt)).toEqual(['c1']), 19);
    m.scheduler.schedule(() => expect(ids(rt)).toEqual([]), 21);
  }));

  it('should refuse to start a run on a closed session', () => {
    const rt = createTestRuntime({ responses: [{ text: 'one' }] });
    rt.sw.sessions.close('c1');
    expect(() => rt.session.start({ prompt: 'go' })).toThrow(SessionClosedError);
  });

  it('should keep at most 1000 sessions by default, with no idle expiry', () => {
    const rt = createTestRuntime({ responses: [{ text: 'one' }] });
    for (let i = 0; i < 1000; i += 1) rt.sw.sessions.open();
    expect(rt.sw.sessions.list()).toHaveLength(1000);
    rt.sw.sessions.open();
    expect(rt.sw.sessions.list()).toHaveLength(1000);
    expect(rt.sw.sessions.get('c1')).toBeUndefined();
  });

  it('should refuse a retention it cannot honour, naming the option', () => {
    expect(() => createTestRuntime({ retention: { idleMs: 0 } })).toThrow(/retention\.idleMs/);
    expect(() => createTestRuntime({ retention: { maxSessions: 1.5 } })).toThrow(/retention\.maxSessions/);
  });
});

describe('createStepwise adopting conversations past maxSessions', () => {
  it('should adopt again, not create anew, a conversation adopted a moment ago and closed since', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'slow', delay_ms: 100 }], retention: { maxSessions: 1 } });
    const stored = (conv_id: string) => ({ conv_id, session_id: `sess_${conv_id}`, created_at: 0, step: { enabled: true }, turns: [], last_seq: 4 });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.scheduler.schedule(() => {
      // Another instance's conversations, joined here: with c1 busy, each adoption closes the one before.
      rt.sw.sessions.adopt(stored('x'));
      rt.sw.sessions.adopt(stored('y'));
      expect(ids(rt)).toEqual(['c1', 'y']);
      // The client that joined x opens it now: the stored conversation, not a new one over it.
      const x = rt.sw.sessions.open({ conv_id: 'x' });
      expect(x.session_id).toBe('sess_x');
      expect(rt.sw.controller.isEnabled('sess_x')).toBe(true);
    }, 1);
  }));
});

describe('createStepwise retention with more running sessions than maxSessions', () => {
  it('should keep the newest tenth of the limit idle, so a conversation just joined is still there when used', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'slow', delay_ms: 100 }], retention: { maxSessions: 20 } });
    m.scheduler.schedule(() => {
      for (let i = 0; i < 25; i += 1) rt.sw.sessions.open({ conv_id: `busy${i}` }).start({ prompt: 'go' });
      for (let i = 0; i < 5; i += 1) rt.sw.sessions.open({ conv_id: `idle${i}` });
      // 25 running (kept), the two newest idle ones before the last opening (a tenth of 20) and that one.
      expect(ids(rt).filter((id) => id.startsWith('idle'))).toEqual(['idle2', 'idle3', 'idle4']);
    }, 0);
  }));
});
