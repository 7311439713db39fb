import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post, request } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { writeQuestionFiles } from '../helpers/question-files.js';

/** JSON text of an object nested `levels` deep: `{"a":{"a":…1…}}`. */
const nestedText = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

/**
 * docs/protocol.md, Untrusted input: a model's arguments nested thousands of levels deep once crashed
 * the process at its question's deadline (the digest overflowed the stack inside a timer), and again
 * at every restart. Through the real CLI on SQLite: the call is refused where it enters, the run goes
 * on, the server stays up and a restart serves the conversation.
 */
describe('the model as untrusted input, through the CLI', () => {
  let dir: string;
  let files: { tools: string; script: string };
  const started: CliServer[] = [];
  const serve = async (extra: readonly string[] = []): Promise<CliServer> => {
    const server = await startCli(['--port', '0', '--tools', files.tools, '--script', files.script, '--store', 'sqlite', '--data-dir', join(dir, 'data'), ...extra]);
    started.push(server);
    return server;
  };
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-untrusted-'));
    files = writeQuestionFiles(dir);
    // 1: a question (it pauses, with no step mode) beside a call nested 3 000 deep; 2: only a deep
    // question (refused: no pause); 3: the answer.
    writeFileSync(
      files.script,
      `{"responses": [
        {"text": "Asking.", "tool_calls": [{"id": "call_q", "name": "ask_booking", "arguments": {"question": "Where?"}}, {"id": "call_deep", "name": "echo", "arguments": ${nestedText(3000)}}]},
        {"tool_calls": [{"id": "call_q2", "name": "ask_booking", "arguments": ${nestedText(3000)}}]},
        {"text": "Done."}
      ]}`,
    );
  });
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('should refuse deep arguments with a tool error, pass the deadline of the question beside them, go on, and serve after a restart', async () => {
    const server = await serve(['--pause-timeout-ms', '400']);
    const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=deep1`);
    expect((await post(server.base, '/chat', { prompt: 'book', conv_id: 'deep1' })).status).toBe(200);

    const pause = await ws.next('debugger.pause');
    // Only the question waits: the refused call is not part of the pause.
    expect(pause.extra.tool_calls.map((call: { id: string }) => call.id)).toEqual(['call_q']);
    const refused = ws.frames.find((frame) => frame.type === 'tool.result' && frame.id === 'call_deep');
    expect(refused).toMatchObject({ result: null, error: 'arguments nested too deeply' });
    expect(ws.frames.find((frame) => frame.type === 'tool.start' && frame.id === 'call_deep')?.input).toEqual({});

    // The deadline passes; the second inference's deep question is refused without a pause; the run ends.
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'timeout' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect(ws.frames.filter((frame) => frame.type === 'debugger.pause')).toHaveLength(1);
    expect(ws.frames.find((frame) => frame.type === 'tool.result' && frame.id === 'call_q2')).toMatchObject({ error: 'arguments nested too deeply' });
    expect((await get(server.base, '/healthz')).status).toBe(200);
    await ws.close();

    const before = (await get(server.base, '/conversations/deep1')).body;
    const uses = before.turns[0].blocks.filter((block: { kind: string }) => block.kind === 'tool_use').map((block: { payload: unknown }) => block.payload);
    expect(uses).toEqual(
      expect.arrayContaining([
        { id: 'call_deep', result: null, error: 'arguments nested too deeply' },
        { id: 'call_q2', result: null, error: 'arguments nested too deeply' },
      ]),
    );

    await server.stop('SIGKILL');
    const again = await serve();
    const after = (await get(again.base, '/conversations/deep1')).body;
    expect(after.turns).toEqual(before.turns);
    expect(after.running).toBe(false);
  }, 30_000);

  it('should refuse a body or a socket message nested deeper than 128 levels before anything else, and accept 128', async () => {
    const server = await serve(['--debug']);
    const deepBody = await request(server.base, 'POST', '/debug/continue', `{"pause_id": "p", "edits": {"x": ${nestedText(3000)}}}`);
    expect(deepBody).toMatchObject({ status: 400, body: { error: { code: 'too_deep' } } });
    // Just past the bound, on a route that would otherwise answer 404 for the unknown pause.
    expect((await request(server.base, 'POST', '/debug/continue', `{"pause_id": "p", "edits": ${nestedText(128)}}`)).body.error.code).toBe('too_deep');
    expect((await request(server.base, 'POST', '/debug/continue', `{"pause_id": "p", "edits": ${nestedText(127)}}`)).body.error.code).toBe('unknown_pause');
    // Brackets inside strings are text, not nesting.
    expect((await post(server.base, '/debug/continue', { pause_id: 'p', reason: '['.repeat(5000) })).body.error.code).toBe('unknown_pause');

    // At a real pause: a deep edit (the depth that once made SQLite refuse the decision's write after a
    // 200) is refused before anything, nothing is recorded, and the conversation goes on being written.
    const paused = await SemClient.connect(`${server.wsBase}/ws?conv_id=deep3`);
    expect((await post(server.base, '/debug/step/enable', { conv_id: 'deep3' })).status).toBe(200);
    expect((await post(server.base, '/chat', { prompt: 'book', conv_id: 'deep3' })).status).toBe(200);
    const pause = await paused.next('debugger.pause');
    const edit = `{"pause_id": "${pause.pause_id}", "action": "edit", "edits": {"call_q": {"question": ${nestedText(2000)}}}}`;
    expect((await request(server.base, 'POST', '/debug/continue', edit)).body.error.code).toBe('too_deep');
    expect((await get(server.base, '/conversations/deep3/decisions')).body.decisions).toEqual([]);
    expect((await get(server.base, '/debug/pauses?conv_id=deep3')).body.pauses.map((p: { pause_id: string }) => p.pause_id)).toEqual([pause.pause_id]);
    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id, action: 'deny', reason: 'no' })).status).toBe(200);
    expect(await paused.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'denied' });
    await paused.close();

    const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=deep2`);
    const other = await SemClient.connect(`${server.wsBase}/ws?conv_id=deep2`);
    ws.ws.send(`{"type": "ws.ping", "x": ${'['.repeat(200)}${']'.repeat(200)}}`);
    expect(await ws.waitClose()).toBe(1007);
    // Only that client's socket: the other still gets its pong.
    await other.ping();
    expect((await get(server.base, '/healthz')).status).toBe(200);
    await other.close();
  }, 30_000);
});
