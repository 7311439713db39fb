import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { request, type Reply } from './server-harness.js';
import type { Frame } from './server-ws-client.js';
import { expectedRefusals, type HostileResponse, type Refusal } from './hostile-model.js';

/**
 * The outside of a hostile-model fuzz (test/helpers/hostile-model.ts): a `stepwise serve` process with its stderr,
 * the report that collects violations (each naming the seed, so one run of the fuzzer reports all it found), HTTP
 * requests checked against the statuses the protocol documents, and a socket that reconnects after a 1013.
 * hostile-runs.ts drives runs and pauses with them; hostile-checks.ts checks the frames.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/stepwise.js');

/** What stderr must never hold: the server's reports of a failure nothing handled, and V8's. */
export const STDERR_FAILURES = /unhandled|unexpected error|uncaught|Maximum call stack|RangeError|TypeError|FATAL|out of memory|SIGSEGV/i;

/** A `stepwise serve` process with its stdout and stderr. */
export interface ServeProcess {
  readonly base: string;
  readonly wsBase: string;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Whether it has not exited (a crash is an exit). */
  alive(): boolean;
  /** How it exited, once it has. */
  exit(): string | undefined;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Runs `node bin/stepwise.js serve …args` with a bare environment; resolves at its ready line. */
export function startServe(args: readonly string[]): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let exit: string | undefined;
  const exited = new Promise<void>((done) =>
    child.once('exit', (code, signal) => {
      exit = `code ${code} signal ${signal}`;
      done();
    }),
  );
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /stepwise listening on (http:\/\/\S+)/.exec(out);
      if (!match) return;
      const base = match[1] as string;
      resolve({
        base,
        wsBase: base.replace(/^http/, 'ws'),
        pid: child.pid as number,
        stdout: () => out,
        stderr: () => err,
        alive: () => exit === undefined,
        exit: () => exit,
        stop: async (signal = 'SIGKILL') => {
          if (exit === undefined) child.kill(signal);
          await exited;
        },
      });
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(`stepwise serve exited (${exit}) before it was ready:\n${out}${err}`)));
  });
}

/** Violations and counts of one fuzz run; every message names the seed. */
export class FuzzReport {
  readonly violations: string[] = [];
  private readonly counts = new Map<string, number>();
  /** Per response, what the server must do with each of its calls. */
  readonly refusals: readonly Refusal[][];

  constructor(
    readonly seed: number,
    readonly responses: readonly HostileResponse[],
  ) {
    this.refusals = responses.map((response) => expectedRefusals(response.calls ?? []));
  }

  fail(where: string, message: string): void {
    this.violations.push(`[seed ${this.seed}] ${where}: ${message}`);
  }

  count(what: string): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }

  /** The counts, sorted: what the run covered. */
  summary(): string {
    return [...this.counts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([what, n]) => `${what}=${n}`)
      .join(' ');
  }

  /** The label of the response the `k`-th inference of a conversation played. */
  responseLabel(k: number): string {
    const response = this.responses[k];
    return response ? `response #${k} (${response.label})` : `inference #${k} (past the script's end)`;
  }
}

/** Short JSON of anything, for messages. */
export const brief = (value: unknown, max = 300): string => {
  let text: string;
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value);
  } catch (error) {
    text = `(unprintable: ${(error as Error).message})`;
  }
  return text === undefined ? 'undefined' : text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
};

/**
 * A real `ws` client of one conversation that a server's 1013 ("too slow; reconnect with since_seq", docs/protocol.md,
 * WebSocket) does not stop: it reconnects with `since_seq` of the last frame it got, as a dashboard does, and keeps
 * every sequenced frame of every connection in one list (a duplicate or a gap stays visible there).
 */
export class FuzzClient {
  /** Every frame with a seq, in the order received, across reconnections. */
  readonly frames: Frame[] = [];
  /** Each connection's `ws.hello`. */
  readonly hellos: Frame[] = [];
  /** Close codes of connections the server closed. */
  readonly closes: number[] = [];
  private ws: WebSocket | undefined;
  private closing = false;
  private waiters: { predicate: (frame: Frame) => boolean; from: number; resolve: (frame: Frame) => void }[] = [];

  private constructor(
    private readonly report: FuzzReport,
    private readonly wsBase: string,
    readonly convId: string,
  ) {}

  /** Joins `convId` (with `since_seq` when given) and resolves at its `ws.hello`. */
  static async connect(report: FuzzReport, wsBase: string, convId: string, sinceSeq?: number): Promise<FuzzClient> {
    const client = new FuzzClient(report, wsBase, convId);
    await client.open(sinceSeq);
    return client;
  }

  private open(sinceSeq?: number): Promise<void> {
    const ws = new WebSocket(`${this.wsBase}/ws?conv_id=${this.convId}${sinceSeq === undefined ? '' : `&since_seq=${sinceSeq}`}`, { maxPayload: 512 * 1024 * 1024 });
    this.ws = ws;
    return new Promise((resolve, reject) => {
      ws.on('message', (data) => {
        const event = (JSON.parse(data.toString()) as { event: Frame }).event;
        if (event.type === 'ws.hello') {
          this.hellos.push(event);
          resolve();
        } else if (event.seq !== undefined) this.receive(event);
      });
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('close', (code) => {
        if (this.closing) return;
        this.closes.push(code);
        this.report.count(`ws_close_${code}`);
        if (code !== 1013) return this.report.fail(`${this.convId} socket`, `closed by the server with ${code}`);
        this.open(this.frames.at(-1)?.seq ?? 0).catch((error: Error) => this.report.fail(`${this.convId} socket`, `could not reconnect after 1013: ${error.message}`));
      });
    });
  }

  private receive(frame: Frame): void {
    const index = this.frames.push(frame) - 1;
    this.waiters = this.waiters.filter((waiter) => {
      if (index < waiter.from || !waiter.predicate(frame)) return true;
      waiter.resolve(frame);
      return false;
    });
  }

  /** The first frame matching among those from index `from` on (already received ones count). */
  waitFor(predicate: (frame: Frame) => boolean, from: number, timeoutMs: number): Promise<Frame> {
    for (let i = from; i < this.frames.length; i += 1) if (predicate(this.frames[i] as Frame)) return Promise.resolve(this.frames[i] as Frame);
    return new Promise((resolve, reject) => {
      const waiter = { predicate, from, resolve: (frame: Frame) => (clearTimeout(timer), resolve(frame)) };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((other) => other !== waiter);
        reject(new Error(`no matching frame in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  close(): Promise<void> {
    this.closing = true;
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      ws.once('close', () => resolve());
      ws.terminate();
    });
  }
}

/** Statuses a request may answer besides 503 with Retry-After; any other is a violation. */
export const DOCUMENTED = [200, 400, 403, 404, 409, 413] as const;

/**
 * A request that must be answered with one of `allowed`, or 503 with `Retry-After` (the service is busy or
 * changing owner: nothing was done); anything else, or a connection failure, is a violation. Undefined when the
 * request failed.
 */
export async function checked(report: FuzzReport, where: string, base: string, method: string, path: string, body: unknown, allowed: readonly number[] = DOCUMENTED): Promise<Reply | undefined> {
  let reply: Reply;
  try {
    reply = await request(base, method, path, body);
  } catch (error) {
    report.fail(where, `${method} ${path} failed: ${(error as Error).message} (${brief((error as { cause?: unknown }).cause)})`);
    return undefined;
  }
  report.count(`http_${reply.status}${reply.status === 200 ? '' : `_${reply.body?.error?.code ?? 'no_code'}`}`);
  if (reply.status === 503 && reply.headers.get('retry-after') !== null) return reply;
  if (!allowed.includes(reply.status)) report.fail(where, `${method} ${path} ${brief(body, 200)} answered ${reply.status} (allowed ${allowed.join('/')}): ${brief(reply.body)}`);
  return reply;
}
