import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
export const TOOLS_FILE = join(repoRoot, 'test/dashboard/fixtures/tools.mjs');

export interface ScriptResponse {
  readonly reasoning?: string;
  readonly text?: string;
  readonly tool_calls?: readonly { readonly id?: string; readonly name: string; readonly arguments: unknown }[];
  readonly delay_ms?: number;
  readonly error?: string;
}

export interface ServeConfig {
  /** The scripted engine's script (docs/protocol.md, Script file); each conversation plays it from the start. */
  readonly script: { readonly responses: readonly ScriptResponse[]; readonly chunk_delay_ms?: number };
  /** Default 120 000: long enough that no pause times out under a test. */
  readonly pauseTimeoutMs?: number;
  /** The tools file; default the suite's `fixtures/tools.mjs`. */
  readonly toolsFile?: string;
  /** More CLI flags, e.g. `--allowed-origins`. */
  readonly extraArgs?: readonly string[];
  /** Bearer tokens as `user:token` pairs (STEPWISE_AUTH_TOKENS); none: a single-user server. */
  readonly authTokens?: string;
}

export interface RunningServer {
  readonly url: string;
  /** JSON request straight to the server (the test acting as another operator or an observer). */
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

const READY = /stepwise listening on (http:\/\/\S+)/;

/** Starts the real CLI (`bin/stepwise.js serve`) on 127.0.0.1, port 0, and waits for its ready line. */
export async function startServer(config: ServeConfig): Promise<RunningServer> {
  const dir = await mkdtemp(join(tmpdir(), 'stepwise-dashboard-'));
  const scriptFile = join(dir, 'script.json');
  await writeFile(scriptFile, JSON.stringify(config.script));
  const args = [
    join(repoRoot, 'bin/stepwise.js'),
    'serve',
    '--host', '127.0.0.1',
    '--port', '0',
    '--debug',
    // In memory: these servers share the repo as cwd, and a restart here stands for a server that lost its history.
    '--store', 'memory',
    '--engine', 'scripted',
    '--script', scriptFile,
    '--tools', config.toolsFile ?? TOOLS_FILE,
    '--pause-timeout-ms', String(config.pauseTimeoutMs ?? 120_000),
    ...(config.extraArgs ?? []),
  ];
  // Single-user server: tokens from the developer's shell must not leak into the test.
  const env = { ...process.env };
  delete env.STEPWISE_AUTH_TOKENS;
  if (config.authTokens) env.STEPWISE_AUTH_TOKENS = config.authTokens;
  const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  const url = await new Promise<string>((resolveUrl, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = READY.exec(output);
      if (match?.[1]) resolveUrl(match[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`stepwise serve exited with ${code} before it was ready:\n${output}`)));
    setTimeout(() => reject(new Error(`stepwise serve not ready after 15 s:\n${output}`)), 15_000).unref();
  });

  return {
    url,
    async api(method, path, body, token) {
      const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': 'application/json' };
      if (token) headers.Authorization = `Bearer ${token}`;
      const response = await fetch(url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    async stop() {
      await stopChild(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
