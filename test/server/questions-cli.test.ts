import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { BOOKING_ANSWER, GOOD_ANSWER, writeQuestionFiles } from '../helpers/question-files.js';

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** docs/protocol.md, Questions for a human: a tools file's question, through the real CLI. */
describe('questions for a human through the CLI', () => {
  let dir: string;
  let files: { tools: string; script: string };
  const started: CliServer[] = [];
  const serve = async (extra: readonly string[] = []): Promise<CliServer> => {
    const server = await startCli(['--port', '0', '--debug', '--tools', files.tools, '--script', files.script, ...extra]);
    started.push(server);
    return server;
  };
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-questions-'));
    files = writeQuestionFiles(dir);
  });
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a run with step mode off: the question pauses anyway. */
  const ask = async (server: CliServer, conv: string): Promise<{ ws: SemClient; pause: any }> => {
    const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}`);
    expect((await post(server.base, '/chat', { prompt: 'book me a room', conv_id: conv })).status).toBe(200);
    return { ws, pause: await ws.next('debugger.pause') };
  };

  it('should pause with the question and its schema, refuse a wrong answer and keep waiting, then go on with the answer', async () => {
    const server = await serve();
    const { ws, pause } = await ask(server, 'q1');
    expect(pause).toMatchObject({ phase: 'after_inference', kind: 'question', answer_schema: BOOKING_ANSWER });
    expect(pause.extra.tool_calls).toEqual([{ id: 'call_q', name: 'ask_booking', input: { question: 'Where to?' }, breakpoint: true, answer_schema: BOOKING_ANSWER }]);
    const continueAt = (body: object) => post(server.base, '/debug/continue', { pause_id: pause.pause_id, ...body });

    const wrong = await continueAt({ action: 'answer', answers: { call_q: { city: 'Lyon', nights: 0, room: 'suite', breakfast: true } } });
    expect(wrong).toMatchObject({ status: 400, body: { error: { code: 'invalid_arguments', details: { answers: { call_q: expect.any(Array) } } } } });
    expect(wrong.body.error.details.answers.call_q.join(' ')).toMatch(/nights/);
    expect((await continueAt({ action: 'answer', answers: {} })).body.error.code).toBe('invalid_arguments');
    expect((await continueAt({ action: 'answer', answers: { call_x: GOOD_ANSWER } })).body.error.code).toBe('invalid_action');
    expect((await continueAt({ action: 'continue', answers: { call_q: GOOD_ANSWER } })).body.error.code).toBe('invalid_action');
    expect((await continueAt({ action: 'answer', answers: { call_q: GOOD_ANSWER }, remember: { scope: 'conversation', tools: ['echo'] } })).status).toBe(400);
    // Nothing changed: the pause still waits, with the same id, and no resume was published.
    expect((await get(server.base, '/debug/pauses?conv_id=q1')).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, kind: 'question' })]);
    expect(ws.frames.some((frame) => frame.type === 'debugger.resume')).toBe(false);

    expect(await continueAt({ action: 'answer', answers: { call_q: GOOD_ANSWER } })).toMatchObject({ status: 200, body: { ok: true } });
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'answered', by: 'local' });
    expect(await ws.next('tool.result')).toMatchObject({ id: 'call_q', result: GOOD_ANSWER });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect((await continueAt({ action: 'answer', answers: { call_q: GOOD_ANSWER } })).status).toBe(409);

    const { turns } = (await get(server.base, '/conversations/q1')).body;
    expect(turns[0].blocks.find((block: any) => block.kind === 'tool_use').payload).toEqual({ id: 'call_q', result: GOOD_ANSWER });
    const { decisions } = (await get(server.base, '/conversations/q1/decisions')).body;
    expect(decisions).toEqual([expect.objectContaining({ pause_id: pause.pause_id, reason: 'answered', by: 'local', tool_call_ids: ['call_q'], answers: { call_q: GOOD_ANSWER } })]);
    await ws.close();
  }, 30_000);

  it('should keep a question paused when step mode is switched off, and give the model an error when its deadline passes unanswered', async () => {
    const server = await serve(['--pause-timeout-ms', '1500']);
    const { ws, pause } = await ask(server, 'q2');
    expect(await post(server.base, '/debug/step/disable', { conv_id: 'q2' })).toMatchObject({ status: 200, body: { released: 0 } });
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'timeout', by: 'system' });
    expect((await ws.next('tool.result')).error).toMatch(/no answer from a human/);
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
  }, 30_000);

  it('should answer a hibernated question on a durable store: the run is rebuilt and the answer is the result', async () => {
    const server = await serve(['--store', 'sqlite', '--data-dir', join(dir, 'data'), '--hibernate-after-ms', '100']);
    const { ws, pause } = await ask(server, 'q3');
    // Long enough past --hibernate-after-ms for the run to have left memory.
    await sleep(700);
    const late = await SemClient.connect(`${server.wsBase}/ws?conv_id=q3`);
    expect(late.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, kind: 'question', answer_schema: BOOKING_ANSWER })]);
    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id, action: 'answer', answers: { call_q: { city: 'Lyon' } } })).status).toBe(400);
    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id, action: 'answer', answers: { call_q: GOOD_ANSWER } })).status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'answered' });
    expect(await ws.next('tool.result')).toMatchObject({ id: 'call_q', result: GOOD_ANSWER });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    const { decisions } = (await get(server.base, '/conversations/q3/decisions')).body;
    expect(decisions).toEqual([expect.objectContaining({ reason: 'answered', answers: { call_q: GOOD_ANSWER } })]);
    await Promise.all([ws.close(), late.close()]);
  }, 30_000);

  it('should ask the same question again after kill -9 and take its answer on the restarted server', async () => {
    const flags = ['--store', 'sqlite', '--data-dir', join(dir, 'data')];
    const first = await serve(flags);
    const { ws, pause } = await ask(first, 'q4');
    await ws.close();
    expect(await first.stop('SIGKILL')).toBe(null);

    const second = await serve(flags);
    const again = await SemClient.connect(`${second.wsBase}/ws?conv_id=q4`);
    expect(again.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, kind: 'question', answer_schema: BOOKING_ANSWER })]);
    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id, action: 'answer', answers: { call_q: { ...GOOD_ANSWER, room: 'suite' } } })).status).toBe(400);
    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id, action: 'answer', answers: { call_q: GOOD_ANSWER } })).status).toBe(200);
    expect(await again.waitFor((frame) => frame.type === 'tool.result')).toMatchObject({ id: 'call_q', result: GOOD_ANSWER });
    expect(await again.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    await again.close();
  }, 30_000);
});
