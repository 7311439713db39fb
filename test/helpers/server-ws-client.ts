import { WebSocket, type ClientOptions } from 'ws';

/** A SEM frame's event as received. */
export type Frame = { type: string; id: string; seq?: number; [field: string]: any };

/**
 * A real `ws` client that records every SEM frame and lets a test wait for one by predicate
 * (never by sleeping).
 */
export class SemClient {
  readonly frames: Frame[] = [];
  closeCode: number | undefined;
  private cursor = 0;
  private waiters: { predicate: (frame: Frame) => boolean; from: number; resolve: (frame: Frame) => void }[] = [];
  private readonly closed: Promise<number>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.receive(JSON.parse(data.toString()) as { sem: true; event: Frame }));
    this.closed = new Promise((resolve) => ws.on('close', (code) => ((this.closeCode = code), resolve(code))));
  }

  /** Connects and resolves once `ws.hello` arrived. */
  static async connect(url: string, options: ClientOptions = {}): Promise<SemClient> {
    const ws = new WebSocket(url, options);
    const client = new SemClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    await client.waitFor((frame) => frame.type === 'ws.hello');
    return client;
  }

  get hello(): Frame {
    return this.frames[0] as Frame;
  }

  /** Frames with a seq (everything but hello and pong). */
  get sequenced(): Frame[] {
    return this.frames.filter((frame) => frame.seq !== undefined);
  }

  /** The first frame matching, among those after index `from` (already received ones count). */
  waitFor(predicate: (frame: Frame) => boolean, from = 0, timeoutMs = 10_000): Promise<Frame> {
    const found = this.frames.slice(from).find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching frame in ${timeoutMs} ms; got ${this.frames.map((f) => f.type).join(' ')}`)), timeoutMs);
      this.waiters.push({ predicate, from, resolve: (frame) => (clearTimeout(timer), resolve(frame)) });
    });
  }

  /**
   * The next frame of `type` after the one `next` returned last (a cursor, so a frame that arrived
   * before the call, e.g. ahead of the HTTP reply that caused it, is not missed).
   */
  async next(type: string, timeoutMs?: number): Promise<Frame> {
    const frame = await this.waitFor((candidate) => candidate.type === type, this.cursor, timeoutMs);
    this.cursor = this.frames.indexOf(frame, this.cursor) + 1;
    return frame;
  }

  /** A ping round trip: every frame the server queued before it has arrived when this resolves. */
  async ping(): Promise<void> {
    const from = this.frames.length;
    this.ws.send(JSON.stringify({ type: 'ws.ping' }));
    await this.waitFor((frame) => frame.type === 'ws.pong', from);
  }

  waitClose(): Promise<number> {
    return this.closed;
  }

  close(): Promise<number> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    return this.closed;
  }

  private receive(message: { sem: true; event: Frame }): void {
    const index = this.frames.push(message.event) - 1;
    this.waiters = this.waiters.filter((waiter) => {
      if (index < waiter.from || !waiter.predicate(message.event)) return true;
      waiter.resolve(message.event);
      return false;
    });
  }
}

/** Resolves with the HTTP status of a refused upgrade (or 101 when it was accepted). */
export function upgradeStatus(url: string, options: ClientOptions = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.once('open', () => {
      resolve(101);
      ws.close();
    });
    ws.once('error', (error) => reject(error));
  });
}
