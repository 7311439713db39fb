import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
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

const upgradeRequest = (convId: string): string =>
  `GET /ws?conv_id=${convId} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
  `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`;

/** What a client on a plain TCP connection sends, and how the server's answer begins and ends. */
interface RawAttack {
  readonly name: string;
  readonly bytes: Buffer;
  readonly startsWith: string;
  readonly endsWith?: Buffer;
}

const RAW_ATTACKS: readonly RawAttack[] = [
  { name: 'a request line that is not HTTP', bytes: Buffer.from('NOT HTTP AT ALL\r\n\r\n'), startsWith: 'HTTP/1.1 400 ' },
  { name: 'headers over 16 KB', bytes: Buffer.from(`GET /healthz HTTP/1.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), startsWith: 'HTTP/1.1 431 ' },
  // In the same packet as the upgrade (ws's `head`): a client's frame must be masked, so ws answers 1002.
  {
    name: 'an unmasked frame behind its upgrade',
    bytes: Buffer.concat([Buffer.from(upgradeRequest('raw-unmasked')), Buffer.from([0x81, 0x02, 0x68, 0x69])]),
    startsWith: 'HTTP/1.1 101 ',
    endsWith: Buffer.from([0x88, 0x02, 0x03, 0xea]),
  },
];

/**
 * Everything the server wrote back on `socket` until the connection closed. A server that closes with
 * bytes of ours still unread resets it: what arrived before counts all the same.
 */
function answerOf(socket: Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  return new Promise((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks))));
}

/** Resolves once the server's answer contains `text`. */
function waitForText(socket: Socket, text: string): Promise<void> {
  let seen = '';
  return new Promise((resolve) => {
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString('latin1');
      if (!seen.includes(text)) return;
      socket.off('data', onData);
      resolve();
    };
    socket.on('data', onData);
  });
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

  const openSocket = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(new URL(cli.base).port), '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
    });

  it.each(RAW_ATTACKS)('should answer $name on its own connection and keep serving', async ({ bytes, startsWith, endsWith }) => {
    const socket = await openSocket();
    const answer = answerOf(socket);
    socket.end(bytes);
    const got = await answer;
    expect(got.toString('latin1').startsWith(startsWith)).toBe(true);
    if (endsWith) expect(got.subarray(-endsWith.length)).toEqual(endsWith);
    expect((await get(cli.base, '/healthz')).status).toBe(200);
  });

  it('should outlive connections reset in the middle of a request, an upgrade and a frame', async () => {
    const bystander = await SemClient.connect(`${cli.wsBase}/ws?conv_id=raw-resets`);
    const midRequest = await openSocket();
    midRequest.write('GET /healthz HTTP/1.1\r\nHost: local');
    const midUpgrade = await openSocket();
    midUpgrade.write(upgradeRequest('raw-resets').slice(0, 60));
    const midFrame = await openSocket();
    const upgraded = waitForText(midFrame, '\r\n\r\n');
    midFrame.write(upgradeRequest('raw-resets'));
    await upgraded;
    // A text frame of 256 bytes announced, mask key and 3 bytes sent.
    midFrame.write(Buffer.from([0x81, 0xfe, 0x01, 0x00, 1, 2, 3, 4, 0x61, 0x62, 0x63]));
    for (const socket of [midRequest, midUpgrade, midFrame]) socket.resetAndDestroy();

    expect((await get(cli.base, '/healthz')).status).toBe(200);
    await bystander.ping();
    expect(bystander.ws.readyState).toBe(bystander.ws.OPEN);
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
