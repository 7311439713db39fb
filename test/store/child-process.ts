import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./fixtures/store-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A running `store-child.ts`, with what it printed so far. */
export interface StoreChild {
  readonly process: ChildProcess;
  readonly pid: number;
  output(): string;
  /** Resolves with the first output line matching `pattern` (waiting for it if needed). */
  line(pattern: RegExp): Promise<string>;
  /** Resolves once the process has exited. */
  readonly exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export function startStoreChild(mode: 'hold' | 'write' | 'open', dataDir: string): StoreChild {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, mode, dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const wake of [...waiters]) wake();
  });
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const line = (pattern: RegExp): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = out.split('\n').find((each) => pattern.test(each));
        if (found === undefined) return false;
        waiters.delete(wake);
        resolve(found);
        return true;
      };
      const wake = (): void => void check();
      if (check()) return;
      waiters.add(wake);
      void exited.then(() => {
        if (!check()) reject(new Error(`store child exited before printing ${String(pattern)}:\n${out}${err}`));
      });
    });
  return {
    process: child,
    pid: child.pid as number,
    output: () => out,
    line,
    exited,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
