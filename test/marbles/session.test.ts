import { marbles } from 'rxjs-marbles/jest';
import { createScriptedEngine, RunInProgressError, SessionStartedError, UnknownToolsError, type Engine, type RunResult } from '../../src/index.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { callEcho, createTestRuntime, isPauseOrEnd, PAUSE_LABELS as L } from './helpers.js';

describe('createSession', () => {
  it('should refuse a second run while one is active, with a typed error', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'slow', delay_ms: 10 }, { text: 'next' }] });
    m.scheduler.schedule(() => {
      rt.session.start({ prompt: 'one' });
      expect(rt.session.running).toBe(true);
      expect(() => rt.session.start({ prompt: 'two' })).toThrow(RunInProgressError);
    }, 0);
    m.scheduler.schedule(() => {
      expect(rt.session.running).toBe(false);
      rt.session.start({ prompt: 'two' });
    }, 11);
    m.flush();
    expect(rt.session.turns().map((t) => t.blocks.at(-1)?.payload)).toEqual([{ text: 'slow' }, { text: 'next' }]);
  }));

  it('should send earlier turns as history to the next run', () => {
    const seen: string[][] = [];
    const rt = createTestRuntime({ responses: [{ text: 'a1' }, { text: 'a2' }] });
    const engine = rt.sw.engine;
    const spy = createTestRuntime({ engine: { ...engine, infer: (r) => (seen.push(r.blocks.map((b) => b.kind)), engine.infer(r)) }, systemPrompt: 'be brief' });
    spy.session.start({ prompt: 'q1' });
    spy.session.start({ prompt: 'q2' });
    expect(seen).toEqual([
      ['system', 'user'],
      ['system', 'user', 'llm_text', 'user'],
    ]);
  });

  it('should keep step mode on across runs until disabled', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'one' }, callEcho('b'), { text: 'two' }], stepMode: true, pauseTimeoutMs: 10 });
    // Run 1 pauses twice (deadline each 10 ms); run 2 too.
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 9ms (tq) 6ms (te) 6ms p 9ms (tq) 6ms (te)', L);
    m.scheduler.schedule(() => rt.session.start({ prompt: 'one' }), 0);
    m.scheduler.schedule(() => rt.session.start({ prompt: 'two' }), 30);
  }));

  it('should apply max_iterations from the run overrides', () => {
    const rt = createTestRuntime({ responses: [callEcho('1'), callEcho('2')] });
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'go', overrides: { max_iterations: 1 } }).result$.subscribe((r) => (result = r));
    expect(result?.status).toBe('max_iterations');
  });

  it('should create a conversation on open and return the same session for its id', () => {
    const rt = createTestRuntime();
    const again = rt.sw.sessions.open({ conv_id: 'c1' });
    expect(again).toBe(rt.session);
    const fresh = rt.sw.sessions.open({ owner: 'alice' });
    expect(fresh).toMatchObject({ conv_id: 'conv_1', owner: 'alice' });
    expect(rt.sw.sessions.list()).toHaveLength(2);
  });

  it('should cancel every run on dispose', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a')], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 1ms (ck)', L);
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.scheduler.schedule(() => {
      rt.sw.dispose();
      rt.sw.dispose();
      expect(rt.sw.controller.pending()).toEqual([]);
    }, 2);
  }));
});

describe('SessionRegistry.close', () => {
  it('should cancel the run, release its pause, and drop the conversation and its buffered events', () => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'again' }], stepMode: true });
    const labels: string[] = [];
    rt.labels$(isPauseOrEnd).subscribe((label) => labels.push(label));
    rt.session.start({ prompt: 'go' });
    expect(rt.sw.sessions.close('c1')).toBe(true);
    expect(labels).toEqual(['paused:after_inference', 'resumed:cancelled', 'run-ended:cancelled']);
    expect(rt.sw.sessions.get('c1')).toBeUndefined();
    expect(rt.sw.hub.lastSeq('c1')).toBe(0);
    expect(rt.sw.controller.isEnabled(rt.session.session_id)).toBe(false);
    expect(rt.sw.sessions.close('c1')).toBe(false);
    // The script starts over for a conversation opened again under the same id.
    const reopened = rt.sw.sessions.open({ conv_id: 'c1' });
    expect(reopened.session_id).not.toBe(rt.session.session_id);
  });
});

describe('per-session choices', () => {
  /** An engine that records the tools it was offered and answers from its own script. */
  function recordingEngine(name: string, text: string) {
    const offered: string[][] = [];
    const inner = createScriptedEngine({ responses: Array.from({ length: 5 }, () => ({ text })) });
    const engine: Engine = { ...inner, name, infer: (request) => (offered.push(request.tools.map((t) => t.name)), inner.infer(request)) };
    return { engine, offered };
  }

  it('should run a session on its own engine and tools, wrapped by the runtime middlewares, and others on the runtime ones', async () => {
    const wrapped: string[] = [];
    const own = recordingEngine('own', 'from own');
    const rt = createTestRuntime({
      responses: [{ text: 'from runtime' }],
      middlewares: [(engine) => ({ ...engine, infer: (request) => (wrapped.push(engine.name), engine.infer(request)) })],
    });
    const chosen = rt.sw.sessions.open({ conv_id: 'c2', engine: own.engine, tools: [createVirtualTool({ name: 'lookup' })] });
    expect((await chosen.start({ prompt: 'a' }).result()).text).toBe('from own');
    expect((await rt.session.start({ prompt: 'b' }).result()).text).toBe('from runtime');
    expect(own.offered).toEqual([['lookup']]);
    expect(wrapped).toEqual(['own', 'scripted']);
    // The allow-list is checked against the session's own tools.
    expect(() => chosen.start({ prompt: 'c', overrides: { tools: ['echo'] } })).toThrow(UnknownToolsError);
  });

  it('should let one run override the engine and tools, and the next run go back to the session ones', async () => {
    const runEngine = recordingEngine('run', 'from the run');
    const rt = createTestRuntime({ responses: [{ text: 'session 1' }, { text: 'session 2' }] });
    const one = await rt.session.start({ prompt: 'a', engine: runEngine.engine, tools: [createVirtualTool({ name: 'other' })] }).result();
    const two = await rt.session.start({ prompt: 'b' }).result();
    expect([one.text, two.text]).toEqual(['from the run', 'session 1']);
    expect(runEngine.offered).toEqual([['other']]);
  });

  it('should apply the session defaults to every run unless the run sets its own, field by field', () => {
    const seen: string[] = [];
    const inner = createScriptedEngine({ responses: [callEcho('x'), callEcho('y'), { text: 'z' }] });
    const engine: Engine = { ...inner, infer: (r) => (seen.push(`${r.blocks[0]?.kind === 'system' ? r.blocks[0].payload.text : '-'}|${r.tools.map((t) => t.name).join(',')}`), inner.infer(r)) };
    const rt = createTestRuntime({ tools: [createVirtualTool(), createVirtualTool({ name: 'other' })] });
    const session = rt.sw.sessions.open({ conv_id: 'p1', engine, profile: 'support', defaults: { system_prompt: 'be kind', tools: ['echo'], max_iterations: 1 } });
    expect(session.profile).toBe('support');
    let first: RunResult | undefined;
    session.start({ prompt: 'a' }).result$.subscribe((r) => (first = r));
    expect(first?.status).toBe('max_iterations');
    session.start({ prompt: 'b', overrides: { system_prompt: 'be brief', max_iterations: 5 } });
    expect(seen).toEqual(['be kind|echo', 'be brief|echo', 'be brief|echo']);
  });

  it('should take choices by configure before the first run, and refuse them after', () => {
    const rt = createTestRuntime({ responses: [{ text: 'hi' }] });
    rt.session.configure({ profile: 'late', defaults: { max_iterations: 2 } });
    expect(rt.session.profile).toBe('late');
    rt.session.start({ prompt: 'go' });
    expect(() => rt.session.configure({ profile: 'other' })).toThrow(SessionStartedError);
    expect(rt.session.profile).toBe('late');
  });
});
