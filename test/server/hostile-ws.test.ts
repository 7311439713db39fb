import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WebSocket } from 'ws';
import { createInboxFactory } from '../../src/server/ws-inbox.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

// One streamed answer per conversation: each case below runs on a conversation of its own.
const dir = mkdtempSync(join(tmpdir(), 'stepwise-hostile-'));
const scriptFile = join(dir, 'script.json');
writeFileSync(scriptFile, JSON.stringify({ responses: [{ text: 'Still here, word by word, for every other client.' }], chunk_delay_ms: 1 }));

interface Attack {
  readonly name: string;
  /** The close code docs/protocol.md "WebSocket" promises for it. */
  readonly code: number;
  readonly send: (ws: WebSocket) => void;
}

const ATTACKS: readonly Attack[] = [
  // Far over the server's 64 KiB maxPayload; 200 KB was enough to end the process.
  { name: 'a 2 MB text message', code: 1009, send: (ws) => ws.send('x'.repeat(2 * 1024 * 1024)) },
  // `binary: false` sends the bytes as a text frame as they are: ws's client does not check them.
  { name: 'a text message of invalid UTF-8', code: 1007, send: (ws) => ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false }) },
  { name: 'a binary message', code: 1003, send: (ws) => ws.send(Buffer.from('{"type":"ws.ping"}')) },
  // Twenty times the default rate, in one go: each answered ping costs the server a pong until then.
  { name: 'a flood of ws.ping messages', code: 1008, send: (ws) => repeat(1000, () => ws.send('{"type":"ws.ping"}')) },
  { name: 'a flood of ping frames', code: 1008, send: (ws) => repeat(1000, () => ws.ping()) },
];

function repeat(times: number, action: () => void): void {
  for (let i = 0; i < times; i++) action();
}

// The server is a real process: a client that could take it down takes down the process, not a test.
describe('hostile WebSocket clients against stepwise serve', { timeout: 60_000 }, () => {
  let cli: CliServer;
  beforeAll(async () => {
    ensureBuilt();
    cli = await startCli(['--port', '0', '--engine', 'scripted', '--script', scriptFile]);
  }, 120_000);
  afterAll(() => cli.stop('SIGKILL'));

  it.each(ATTACKS)('should close only the client that sends $name ($code)', async ({ name, code, send }) => {
    const convId = name.replace(/\W+/g, '-');
    const bystander = await SemClient.connect(`${cli.wsBase}/ws?conv_id=${convId}`);
    const hostile = await SemClient.connect(`${cli.wsBase}/ws?conv_id=${convId}`);
    send(hostile.ws);
    expect(await hostile.waitClose()).toBe(code);

    expect((await get(cli.base, '/healthz')).status).toBe(200);
    expect(cli.process.exitCode).toBeNull();
    expect((await post(cli.base, '/chat', { prompt: 'go on', conv_id: convId })).status).toBe(200);
    expect(await bystander.next('run.end')).toMatchObject({ status: 'completed' });
    const frames = bystander.sequenced;
    expect(frames.map((frame) => frame.seq)).toEqual(frames.map((_, i) => i + 1));
    expect(frames[0]?.type).toBe('run.start');
    expect(frames.at(-2)).toMatchObject({ type: 'llm.final', text: 'Still here, word by word, for every other client.' });
    await bystander.close();
  });
});

describe('the message rate', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ maxClientMessagesPerSecond: 5 });
  });
  afterAll(() => t.close());

  it('should keep a client within it, second after second, and close one past it with 1008', async () => {
    const client = await SemClient.connect(`${t.wsBase}/ws?conv_id=rate`);
    for (let second = 0; second < 2; second++) {
      if (second > 0) await new Promise((resolve) => setTimeout(resolve, 1100));
      for (let i = 0; i < 5; i++) await client.ping();
    }
    expect(client.frames.filter((frame) => frame.type === 'ws.pong')).toHaveLength(10);
    client.ws.send('ping');
    expect(await client.waitClose()).toBe(1008);
  });

  it('should refuse a rate that is not a positive integer when the server is built', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => createInboxFactory({ maxMessagesPerSecond: bad })).toThrow(/maxMessagesPerSecond/);
  });
});
