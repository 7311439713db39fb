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

export interface CliServer {
  readonly process: ChildProcess;
  readonly base: string;
  readonly wsBase: string;
  /** Everything printed so far. */
  readonly stdout: () => string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const READY = /stepwise listening on (http:\/\/([^\s]+))/;

/** Runs `node bin/stepwise.js serve …args` and resolves at its ready line. */
export function startCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliServer> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return new Promise((resolveReady, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = READY.exec(out);
      if (!match) return;
      const base = match[1] as string;
      resolveReady({
        process: child,
        base,
        wsBase: base.replace(/^http/, 'ws'),
        stdout: () => out,
        stop: (signal = 'SIGTERM') => (child.exitCode === null ? (child.kill(signal), exited) : Promise.resolve(child.exitCode)),
      });
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    void exited.then((code) => reject(new Error(`stepwise exited with ${code} before it was ready:\n${out}${err}`)));
  });
}

/** Runs the CLI to completion (for refusals): exit code and output. */
export function runCli(args: readonly string[], env: Record<string, string> = {}): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, encoding: 'utf8', timeout: 15_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
