import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { within } from './scenario.js';

/**
 * A `stepwise serve` process of the measured build, for the cases measured from outside: the CLI's
 * `main` run by a one-line shim (what bin/stepwise.js does with dist/), in a bare environment, on a
 * free port. Plus a keep-alive JSON client with bounded concurrency, so that starting 100 000 runs
 * costs neither a connection nor a socket per request.
 */
export interface ServeProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly base: string;
  /** Resident set size now, in KB (`VmRSS` of /proc/<pid>/status). */
  rssKb(): number;
  /** SIGKILL by PID; resolves once the process is gone. */
  stop(): Promise<void>;
}

const READY = /stepwise listening on (http:\/\/[^\s]+)/;

export async function startServe(cliMainUrl: string, args: readonly string[], nodeFlags: readonly string[] = []): Promise<ServeProcess> {
  const shim = `import(${JSON.stringify(cliMainUrl)}).then(({ main }) => main(process.argv.slice(1))).catch((e) => { console.error(e); process.exit(1); })`;
  const child = spawn(process.execPath, [...nodeFlags, '--input-type=module', '-e', shim, '--', 'serve', ...args], {
    env: { PATH: process.env['PATH'] ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    await exited;
  };
  try {
    const base = await within(
      new Promise<string>((resolve, reject) => {
        let out = '';
        let err = '';
        child.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = READY.exec(out);
          if (match) resolve(match[1] as string);
        });
        child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
        void exited.then(() => reject(new Error(`serve exited before it was ready:\n${out}${err}`)));
      }),
      120_000,
      'the serve process',
    );
    const pid = child.pid as number;
    return { child, pid, base, rssKb: () => readRssKb(pid), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export function readRssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]);
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at once. */
export async function eachBounded(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let index = next++; index < count; index = next++) await task(index);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}
