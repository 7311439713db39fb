import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/stepwise.js');
const COMPILED_CLI = join(ROOT, 'dist/src/cli/main.js');

function newestMtime(dir: string): number {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .reduce((newest, entry) => Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs), 0);
}

/** `bin/stepwise.js` runs the compiled dist: rebuild it when the sources are newer (`npm test` builds first). */
export function ensureBuilt(): void {
  if (existsSync(COMPILED_CLI) && statSync(COMPILED_CLI).mtimeMs >= newestMtime(join(ROOT, 'src'))) return;
  spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(COMPILED_CLI)) throw new Error('could not build dist/src/cli/main.js');
}

export interface StartedProcess {
  readonly process: ChildProcess;
  readonly base: string;
  readonly wsBase: string;
  /** Everything printed so far. */
  readonly stdout: () => string;
  /** Sends a signal to its PID and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A `stepwise serve` started by a test. */
export type CliServer = StartedProcess;

const READY = /stepwise listening on (http:\/\/([^\s]+))/;

export interface StartOptions {
  readonly cwd?: string;
  /** Added to a bare environment (PATH only), so the developer's API keys never leak in. */
  readonly env?: Record<string, string>;
}

/** Runs `command args` (a stepwise bin) and resolves at its ready line `stepwise listening on http://HOST:PORT`. */
export function startProcess(command: string, args: readonly string[], options: StartOptions = {}): Promise<StartedProcess> {
  const child = spawn(command, [...args], {
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const stop = (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
    if (child.pid !== undefined) process.kill(child.pid, signal);
    return exited;
  };
  return new Promise((resolveReady, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = READY.exec(out);
      if (!match) return;
      const base = match[1] as string;
      resolveReady({ process: child, base, wsBase: base.replace(/^http/, 'ws'), stdout: () => out, stop });
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    void exited.then((code) => reject(new Error(`${command} exited with ${code} before it was ready:\n${out}${err}`)));
  });
}

/** Runs `node bin/stepwise.js serve …args` and resolves at its ready line. */
export function startCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliServer> {
  // `--store memory` unless the test chooses a store: tests in parallel must not share (and lock) ./.stepwise.
  const store = args.includes('--store') || args.includes('--data-dir') ? [] : ['--store', 'memory'];
  return startProcess(process.execPath, [BIN, 'serve', ...store, ...args], { env });
}

/** Runs the CLI to completion (for refusals): exit code and output. */
export function runCli(args: readonly string[], env: Record<string, string> = {}): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, encoding: 'utf8', timeout: 15_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
