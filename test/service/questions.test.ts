import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useRedisServer } from '../helpers/redis-server.js';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { GOOD_ANSWER, writeQuestionFiles } from '../helpers/question-files.js';
import { TEST_LEASE_MS } from './helpers.js';

/**
 * A question's answer posted to the instance that does not run the conversation reaches its owner through the command
 * port (docs/protocol.md, Questions for a human and Several instances): a wrong one is refused there with its code,
 * the right one resumes the run as `answered`.
 */
describe('a question answered on another instance', () => {
  const redis = useRedisServer();
  const started: CliServer[] = [];
  let dir: string;
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'stepwise-cluster-q-'))));
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('should refuse a wrong answer from B with 400 and keep the pause, then resume with the answer from B', async () => {
    const { tools, script } = writeQuestionFiles(dir);
    const flags = ['--port', '0', '--debug', '--tools', tools, '--script', script, '--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];
    const [a, b] = await Promise.all([startCli(flags), startCli(flags)]);
    started.push(a, b);
    const ws = await SemClient.connect(`${a.wsBase}/ws?conv_id=cq1`);
    expect((await post(a.base, '/chat', { prompt: 'book', conv_id: 'cq1' })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    expect(pause.kind).toBe('question');

    const wrong = await post(b.base, '/debug/continue', { pause_id: pause.pause_id, action: 'answer', answers: { call_q: { city: 'Lyon' } } });
    expect(wrong).toMatchObject({ status: 400, body: { error: { code: 'invalid_arguments', details: { answers: { call_q: expect.any(Array) } } } } });
    expect((await get(b.base, '/debug/pauses')).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, kind: 'question' })]);

    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id, action: 'answer', answers: { call_q: GOOD_ANSWER } })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'answered' });
    expect(await ws.waitFor((frame) => frame.type === 'tool.result')).toMatchObject({ id: 'call_q', result: GOOD_ANSWER });
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    const { decisions } = (await get(b.base, '/conversations/cq1/decisions')).body;
    expect(decisions).toEqual([expect.objectContaining({ reason: 'answered', answers: { call_q: GOOD_ANSWER } })]);
    await ws.close();
  }, 60_000);
});
