import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real `redis-server` (Debian's) started by a test: its own free port, its own temp dir, AOF on, no
 * config file, no RDB snapshots. Never a system service, never a fixed port: tests in parallel each
 * start their own, and a stop/start keeps the port and the dir (the AOF), so clients reconnect to the
 * same URL and find their data.
 */
export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:PORT`. */
  readonly url: string;
  /** The temp dir holding the AOF. */
  readonly dir: string;
  /** The running server's pid; undefined while stopped. */
  readonly pid: number | undefined;
  /** SIGTERM (Redis writes its AOF and exits), SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
  /** Starts it again on the same port and dir; resolves once it answers PING. */
  start(): Promise<void>;
  /** `stop()` then `start()`. */
  restart(): Promise<void>;
  /** Stops it and deletes its dir. */
  remove(): Promise<void>;
}

export const REDIS_SERVER_BIN = 'redis-server';

/** Whether `redis-server` is on PATH (`.ci/run` installs Debian's). */
export function hasRedisServer(): boolean {
  return spawnSync(REDIS_SERVER_BIN, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A port nobody listens on now: the OS picks it for a throwaway server on port 0. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** One PING over a raw socket: true when the server answers PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Starts `redis-server` on a free port in a new temp dir; resolves once it answers PING. */
export async function startRedisServer(): Promise<RedisServer> {
  if (!hasRedisServer()) {
    throw new Error(`${REDIS_SERVER_BIN} is not installed: run "apt-get install -y redis-server" (.ci/run does)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-redis-'));
  let port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';

  const launch = async (): Promise<void> => {
    output = '';
    const started = spawn(
      REDIS_SERVER_BIN,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--daemonize', 'no', '--loglevel', 'warning'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((done) => started.once('exit', () => done()));
    const end = Date.now() + 10_000;
    for (;;) {
      if (started.exitCode !== null || started.signalCode !== null) throw new Error(`redis-server exited before it answered PING:\n${output}`);
      if (await ping(port)) return;
      if (Date.now() > end) {
        started.kill('SIGKILL');
        throw new Error(`redis-server did not answer PING on port ${port} within 10 s:\n${output}`);
      }
      await sleep(20);
    }
  };

  const stop = async (graceMs = 5000): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    running.kill('SIGTERM');
    const killer = setTimeout(() => running.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(killer);
  };

  // The port was free a moment ago; another process may take it first: pick another, a few times.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt >= 3 || !/Address already in use/i.test(output)) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
      port = await freePort();
    }
  }

  return {
    get port() {
      return port;
    },
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    dir,
    get pid() {
      return child?.pid;
    },
    stop,
    start: async () => {
      if (child) return;
      await launch();
    },
    restart: async () => {
      await stop();
      await launch();
    },
    remove: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One redis-server for the calling `describe` (started before its tests, removed after them). */
export function useRedisServer(): () => RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
  }, 20_000);
  afterAll(async () => {
    await server?.remove();
  });
  return () => {
    if (!server) throw new Error('useRedisServer: the redis-server is not running (outside a test?)');
    return server;
  };
}
