import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One server-sent event; `event` is omitted for Chat Completions, which sends bare `data:` lines. */
export interface SseFrame {
  readonly event?: string;
  readonly data: string;
}

export type ReplayResponse =
  | {
      readonly kind: 'stream';
      readonly frames: readonly SseFrame[];
      /** Write this many frames, then destroy the socket (a stream cut mid-way). */
      readonly cutAfter?: number;
      /** Write this many frames, then wait for `release()` or the client to go away. */
      readonly holdAfter?: number;
    }
  | {
      readonly kind: 'error';
      readonly status: number;
      readonly body: unknown;
      readonly headers?: Readonly<Record<string, string>>;
    };

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  readonly body: any;
  /** Resolves when the client closed the connection before the response ended. */
  readonly clientClosed: Promise<void>;
}

export interface ReplayServer {
  /** `http://127.0.0.1:PORT` plus the given path prefix, e.g. `/v1`. */
  url(prefix?: string): string;
  /** Responses to serve, one per incoming request, in order. */
  enqueue(...responses: ReplayResponse[]): void;
  readonly requests: readonly RecordedRequest[];
  /** Resolves with the n-th request (0-based) once it has arrived. */
  request(n: number): Promise<RecordedRequest>;
  /** Resolves once the held stream has written its first `holdAfter` frames. */
  held(): Promise<void>;
  /** Lets held streams finish. */
  release(): void;
  close(): Promise<void>;
}

const here = new URL('../fixtures/', import.meta.url);

/** The chunks of `test/fixtures/<name>.chunks.txt`, one JSON value per line. */
export function loadChunks(name: string): any[] {
  const text = readFileSync(new URL(`${name}.chunks.txt`, here), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

/** Chat Completions framing: `data: <chunk>` per chunk, then `data: [DONE]`. */
export function chatFrames(chunks: readonly unknown[]): SseFrame[] {
  return [...chunks.map((c) => ({ data: JSON.stringify(c) })), { data: '[DONE]' }];
}

/** Responses and Anthropic framing: `event: <type>` then `data: <chunk>`. */
export function typedFrames(chunks: readonly { type: string }[]): SseFrame[] {
  return chunks.map((c) => ({ event: c.type, data: JSON.stringify(c) }));
}

export const stream = (frames: readonly SseFrame[], options: { cutAfter?: number; holdAfter?: number } = {}): ReplayResponse => ({
  kind: 'stream',
  frames,
  ...options,
});

export const httpError = (status: number, body: unknown, headers?: Record<string, string>): ReplayResponse => ({
  kind: 'error',
  status,
  body,
  ...(headers ? { headers } : {}),
});

/**
 * A local stand-in for a provider: replays scripted SSE streams and errors to the official SDK
 * clients over real HTTP on 127.0.0.1, and records what they sent.
 */
export async function startReplayServer(): Promise<ReplayServer> {
  const queue: ReplayResponse[] = [];
  const requests: RecordedRequest[] = [];
  const waiters = new Map<number, (r: RecordedRequest) => void>();
  let releaseHeld: () => void = () => {};
  let released = new Promise<void>((resolve) => (releaseHeld = resolve));
  let signalHeld: () => void = () => {};
  const heldOnce = new Promise<void>((resolve) => (signalHeld = resolve));

  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let markClosed: () => void = () => {};
      const clientClosed = new Promise<void>((resolve) => (markClosed = resolve));
      res.on('close', () => {
        if (!res.writableFinished) markClosed();
      });
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
        clientClosed,
      };
      requests.push(recorded);
      waiters.get(requests.length - 1)?.(recorded);
      const response = queue.shift();
      if (!response) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'replay server: no response queued', type: 'server_error' } }));
        return;
      }
      void serve(response, res, released, signalHeld);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: (prefix = '') => `http://127.0.0.1:${port}${prefix}`,
    enqueue: (...responses) => void queue.push(...responses),
    requests,
    request: (n) =>
      requests[n] ? Promise.resolve(requests[n]) : new Promise((resolve) => waiters.set(n, resolve)),
    held: () => heldOnce,
    release: () => {
      releaseHeld();
      released = new Promise<void>((resolve) => (releaseHeld = resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        releaseHeld();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function serve(response: ReplayResponse, res: ServerResponse, released: Promise<void>, signalHeld: () => void) {
  if (response.kind === 'error') {
    res.writeHead(response.status, { 'content-type': 'application/json', ...response.headers });
    res.end(JSON.stringify(response.body));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const write = (frame: SseFrame) =>
    res.write(`${frame.event ? `event: ${frame.event}\n` : ''}data: ${frame.data}\n\n`);
  const { frames, cutAfter, holdAfter } = response;
  for (const [i, frame] of frames.entries()) {
    if (i === cutAfter) {
      // Let the written frames reach the client before the cut, as a dropped connection would.
      await new Promise<void>((resolve) => res.write('', () => resolve()));
      res.socket?.destroy();
      return;
    }
    if (i === holdAfter) {
      signalHeld();
      await Promise.race([released, new Promise((resolve) => res.once('close', resolve))]);
      if (res.destroyed) return;
    }
    write(frame);
  }
  res.end();
}
