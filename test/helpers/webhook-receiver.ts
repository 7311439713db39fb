import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isValidSignature } from '../../src/server/webhooks/signing.js';

/** One POST a receiver got, with whether its signature checked out under the receiver's secret. */
export interface Received {
  readonly at: number;
  readonly method: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly verified: boolean;
  readonly body: any;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly received: Received[];
  /** Resolves with the first POST from index `from` on that matches (waits, never sleeps). */
  next(predicate: (received: Received) => boolean, from?: number, timeoutMs?: number): Promise<Received>;
  close(): Promise<void>;
}

/** A redirect to `location` with `status` (3xx). */
export type Redirect = { readonly status: number; readonly location: string };

/** How a receiver answers: `ok` (204), `fail` (500), `hang` (never), a redirect, or a function of the try's number. */
export type ReceiverMode = 'ok' | 'fail' | 'hang' | Redirect | ((attempt: number) => 'ok' | 'fail');

/** A webhook receiver on 127.0.0.1, port 0, that checks `x-stepwise-signature` as docs/protocol.md says a receiver should. */
export async function startReceiver(secret: string, mode: ReceiverMode = 'ok'): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const waiters: { predicate: (item: Received) => boolean; from: number; resolve: (item: Received) => void }[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const timestamp = String(req.headers['x-stepwise-timestamp'] ?? '');
      const signature = String(req.headers['x-stepwise-signature'] ?? '');
      // A followed redirect may arrive as a GET without a body: recorded all the same.
      const body = raw === '' ? undefined : JSON.parse(raw);
      const item: Received = { at: Date.now(), method: req.method ?? '', timestamp, signature, verified: isValidSignature(secret, timestamp, raw, signature), body };
      const index = received.push(item) - 1;
      for (const waiter of waiters.splice(0)) {
        if (index >= waiter.from && waiter.predicate(item)) waiter.resolve(item);
        else waiters.push(waiter);
      }
      const answer = typeof mode === 'function' ? mode(index + 1) : mode;
      if (answer === 'hang') hanging.push(res);
      else if (typeof answer === 'object') res.writeHead(answer.status, { location: answer.location }).end();
      else res.writeHead(answer === 'ok' ? 204 : 500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    next: (predicate, from = 0, timeoutMs = 10_000) => {
      const found = received.slice(from).find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching webhook POST in ${timeoutMs} ms; got ${received.length}`)), timeoutMs);
        waiters.push({ predicate, from, resolve: (item) => (clearTimeout(timer), resolve(item)) });
      });
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
