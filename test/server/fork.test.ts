import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

let n = 0;
const nextConv = (label: string): string => `fork-${label}-${++n}`;

/** Runs one prompt to its end, watched over a WebSocket joined first. */
async function runToEnd(t: TestServer, conv: string, prompt: string): Promise<void> {
  const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}&since_seq=${(await lastSeq(t, conv))}`);
  expect((await post(t.base, '/chat', { prompt, conv_id: conv })).status).toBe(200);
  expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
  await ws.close();
}

const lastSeq = async (t: TestServer, conv: string): Promise<number> => {
  const hydrated = await get(t.base, `/hydrate?conv_id=${conv}`);
  return hydrated.status === 200 ? hydrated.body.last_seq : 0;
};

describe('POST /conversations/:conv_id/fork', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, runtime: { pauseTimeoutMs: 30_000 } });
  });
  afterAll(() => t.close());

  it('should fork at a turn: a copy of the history up to it, listed with forked_from, the source unchanged', async () => {
    const source = nextConv('turn');
    await runToEnd(t, source, 'first');
    await runToEnd(t, source, 'second');
    const before = (await get(t.base, `/conversations/${source}`)).body;
    expect(before.turns).toHaveLength(2);
    const [first] = before.turns;

    const forked = await post(t.base, `/conversations/${source}/fork`, { turn_id: first.id });
    expect(forked.status).toBe(200);
    expect(forked.body).toEqual({ conv_id: expect.any(String), session_id: expect.any(String), forked_from: { conv_id: source, turn_id: first.id } });
    const fork = forked.body.conv_id as string;
    expect(fork).not.toBe(source);

    const shown = (await get(t.base, `/conversations/${fork}`)).body;
    expect(shown).toMatchObject({ conv_id: fork, session_id: forked.body.session_id, running: false, forked_from: { conv_id: source, turn_id: first.id } });
    expect(shown.turns).toEqual([first]);
    const listed = (await get(t.base, '/conversations')).body.conversations;
    expect(listed.find((c: { conv_id: string }) => c.conv_id === fork)).toMatchObject({ forked_from: { conv_id: source, turn_id: first.id } });
    expect(listed.find((c: { conv_id: string }) => c.conv_id === source)).not.toHaveProperty('forked_from');

    // The fork goes its own way; the source keeps its two turns exactly.
    await runToEnd(t, fork, 'a different second');
    const after = (await get(t.base, `/conversations/${fork}`)).body;
    expect(after.turns).toHaveLength(2);
    expect(after.turns[0]).toEqual(first);
    expect(after.turns[1].blocks[0]).toMatchObject({ kind: 'user', payload: { text: 'a different second' } });
    expect((await get(t.base, `/conversations/${source}`)).body.turns).toEqual(before.turns);

    // No turn and no pause: the whole history.
    const whole = await post(t.base, `/conversations/${source}/fork`, {});
    expect(whole.body.forked_from).toEqual({ conv_id: source });
    expect((await get(t.base, `/conversations/${whole.body.conv_id}`)).body.turns).toEqual(before.turns);
  });

  it('should fork at a pause: the fork pauses again with a new id and the same calls, decided differently while the source waits', async () => {
    const source = nextConv('pause');
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${source}`);
    expect((await post(t.base, '/chat', { prompt: 'add please', conv_id: source, overrides: { step_mode: true } })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    const sourceBefore = (await get(t.base, `/conversations/${source}`)).body;
    const pausesBefore = (await get(t.base, `/debug/pauses?conv_id=${source}`)).body.pauses;

    const forked = await post(t.base, `/conversations/${source}/fork`, { pause_id: pause.pause_id });
    expect(forked.status).toBe(200);
    const fork = forked.body.conv_id as string;
    expect(forked.body).toMatchObject({ forked_from: { conv_id: source, pause_id: pause.pause_id }, pause_id: expect.any(String) });
    expect(forked.body.pause_id).not.toBe(pause.pause_id);

    // Joined after the fork: the hello lists its pause, and the replay shows the run start and pause.
    const fws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${fork}&since_seq=0`);
    const [again] = fws.hello.pending_pauses;
    expect(again).toMatchObject({ pause_id: forked.body.pause_id, phase: 'after_inference', conv_id: fork, session_id: forked.body.session_id, tool_calls: pause.extra.tool_calls });
    expect(again.inference_id).not.toBe(pause.metadata.inference_id);
    expect(fws.sequenced.map((f) => f.type)).toEqual(['run.start', 'log', 'debugger.pause']);
    expect(fws.sequenced[1]).toMatchObject({ level: 'info', fields: { conv_id: source, pause_id: pause.pause_id, copied_blocks: sourceBefore.turns[0].blocks.length } });
    const forkShown = (await get(t.base, `/conversations/${fork}`)).body;
    expect(forkShown).toMatchObject({ running: true, step_mode: true, forked_from: { conv_id: source, pause_id: pause.pause_id } });
    expect(forkShown.turns).toEqual(sourceBefore.turns);

    // Decided differently in the fork: edited arguments, then through to the end.
    const edited = await post(t.base, '/debug/continue', { pause_id: again.pause_id, action: 'edit', edits: { call_0_a: { a: 40, b: 2 } } });
    expect(edited.status).toBe(200);
    expect(await fws.next('tool.result')).toMatchObject({ id: 'call_0_a', result: { sum: 42 } });
    const afterTools = await fws.next('debugger.pause');
    expect(afterTools.phase).toBe('after_tools');
    expect((await post(t.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    // The engine went on from where the source stood: the script's answer, not its first call again.
    expect((await fws.next('llm.final')).text).toBe('The sum is 2. Done.');
    expect(await fws.next('run.end')).toMatchObject({ status: 'completed' });

    // The source is still paused, exactly as before, and none of the fork's decisions are its.
    expect((await get(t.base, `/debug/pauses?conv_id=${source}`)).body.pauses).toEqual(pausesBefore);
    expect((await get(t.base, `/conversations/${source}`)).body).toEqual(sourceBefore);
    expect((await get(t.base, `/conversations/${source}/decisions`)).body.decisions).toEqual([]);
    expect((await get(t.base, `/conversations/${fork}/decisions`)).body.decisions).toEqual([
      expect.objectContaining({ pause_id: again.pause_id, reason: 'edited', edits: { call_0_a: { before: { a: 0, b: 2 }, after: { a: 40, b: 2 } } } }),
      expect.objectContaining({ pause_id: afterTools.pause_id, reason: 'continued' }),
    ]);
    expect(ws.frames.filter((f) => f.type === 'debugger.resume')).toEqual([]);

    // Then the source decides for itself: its own run, its own sum.
    expect((await post(t.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    expect(await ws.next('tool.result')).toMatchObject({ id: 'call_0_a', result: { sum: 2 } });
    const sourceAfterTools = await ws.next('debugger.pause');
    await post(t.base, '/debug/continue', { pause_id: sourceAfterTools.pause_id });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });

    // Its pause is resolved now: nothing to fork there any more.
    const late = await post(t.base, `/conversations/${source}/fork`, { pause_id: pause.pause_id });
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'pause_resolved' } } });
    await Promise.all([ws.close(), fws.close()]);
  });

  it('should fork at an after_tools pause: the tool results are copied, the fork pauses there again and goes on alone', async () => {
    const source = nextConv('after-tools');
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${source}`);
    expect((await post(t.base, '/chat', { prompt: 'add please', conv_id: source, overrides: { step_mode: true } })).status).toBe(200);
    const first = await ws.next('debugger.pause');
    await post(t.base, '/debug/continue', { pause_id: first.pause_id });
    const pause = await ws.next('debugger.pause');
    expect(pause.phase).toBe('after_tools');

    const forked = await post(t.base, `/conversations/${source}/fork`, { pause_id: pause.pause_id });
    expect(forked.status).toBe(200);
    const fws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${forked.body.conv_id}&since_seq=0`);
    expect(fws.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: forked.body.pause_id, phase: 'after_tools', tool_calls: [] })]);
    const running = (await get(t.base, `/conversations/${forked.body.conv_id}`)).body.turns[0].blocks;
    expect(running.find((b: { kind: string }) => b.kind === 'tool_use')).toMatchObject({ payload: { id: 'call_0_a', result: { sum: 2 } } });

    // Cancelling the source ends only the source's run.
    expect((await post(t.base, '/chat/cancel', { conv_id: source })).body).toEqual({ ok: true, cancelled: true });
    expect(await ws.next('run.end')).toMatchObject({ status: 'cancelled' });
    expect((await post(t.base, '/debug/continue', { pause_id: forked.body.pause_id })).status).toBe(200);
    expect((await fws.next('llm.final')).text).toBe('The sum is 2. Done.');
    expect(await fws.next('run.end')).toMatchObject({ status: 'completed' });
    await Promise.all([ws.close(), fws.close()]);
  });

  it('should refuse what it cannot fork, with clear codes', async () => {
    const source = nextConv('errors');
    await runToEnd(t, source, 'hello');
    const fork = (body: unknown, conv = source) => post(t.base, `/conversations/${conv}/fork`, body);
    expect(await fork({}, 'nope')).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(await fork({ turn_id: 'no-such-turn' })).toMatchObject({ status: 404, body: { error: { code: 'unknown_turn' } } });
    expect(await fork({ pause_id: 'no-such-pause' })).toMatchObject({ status: 404, body: { error: { code: 'unknown_pause' } } });
    expect(await fork({ turn_id: 'a', pause_id: 'b' })).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(await fork({ turn_id: 7 })).toMatchObject({ status: 400, body: { error: { details: { fields: [expect.objectContaining({ field: 'turn_id' })] } } } });
    expect(await fork({ at: 'x' })).toMatchObject({ status: 400 });
    expect((await request(t.base, 'GET', `/conversations/${source}/fork`)).status).toBe(405);

    // The turn a run is still writing cannot be copied; the whole history then is the finished turns.
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${source}&since_seq=${await lastSeq(t, source)}`);
    const started = await post(t.base, '/chat', { prompt: 'again', conv_id: source, overrides: { step_mode: true } });
    await ws.next('debugger.pause');
    expect(await fork({ turn_id: started.body.turn_id })).toMatchObject({ status: 409, body: { error: { code: 'turn_running' } } });
    const whole = await fork(undefined);
    expect(whole.status).toBe(200);
    const copied = (await get(t.base, `/conversations/${whole.body.conv_id}`)).body;
    expect(copied.turns.map((turn: { id: string }) => turn.id)).toEqual([(await get(t.base, `/conversations/${source}`)).body.turns[0].id]);
    expect(copied.running).toBe(false);
    await post(t.base, '/chat/cancel', { conv_id: source });
    await ws.close();
  });
});

describe('POST /conversations/:conv_id/fork with auth', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ tokens: new Map([['ta', 'alice'], ['tb', 'bob']]) });
  });
  afterAll(() => t.close());

  it("should fork only the caller's conversations, and the fork is the caller's", async () => {
    const started = await post(t.base, '/chat', { prompt: 'hi' }, 'ta');
    const conv = started.body.conv_id as string;
    expect((await post(t.base, `/conversations/${conv}/fork`, {})).status).toBe(401);
    expect(await post(t.base, `/conversations/${conv}/fork`, {}, 'tb')).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
    const forked = await post(t.base, `/conversations/${conv}/fork`, {}, 'ta');
    expect(forked.status).toBe(200);
    expect((await get(t.base, `/conversations/${forked.body.conv_id}`, 'tb')).status).toBe(403);
    expect((await get(t.base, `/conversations/${forked.body.conv_id}`, 'ta')).status).toBe(200);
  });
});
