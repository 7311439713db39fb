import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';

/**
 * A temp data dir with the files a crash test serves: scripts (one tool call, then an answer) and a
 * tools file whose tools log each run to `runs.log`, so a test can count how often a tool ran.
 */
export interface DurableDir {
  readonly dir: string;
  readonly dataDir: string;
  readonly toolsFile: string;
  /** A script file: the model calls `tool` then answers; `delayMs` slows its first inference. */
  script(name: string, tool: string, delayMs?: number): string;
  /** The tool names that ran, in order. */
  runs(): string[];
  remove(): void;
}

export function createDurableDir(): DurableDir {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-durable-'));
  const log = join(dir, 'runs.log');
  const toolsFile = join(dir, 'tools.mjs');
  const slowTool = (name: string, idempotent: boolean): string => `{
    name: '${name}', description: 'a slow tool', idempotent: ${idempotent},
    parameters: { type: 'object', properties: { n: { type: 'number' } } },
    execute: async (args) => {
      appendFileSync(${JSON.stringify(log)}, '${name}\\n');
      await new Promise((done) => setTimeout(done, Number(process.env.SLOW_TOOL_MS ?? 0)));
      return { ok: true, n: args.n ?? 0 };
    },
  }`;
  writeFileSync(toolsFile, `import { appendFileSync } from 'node:fs';\nexport default [${slowTool('slow', false)}, ${slowTool('slow_idempotent', true)}];\n`);
  return {
    dir,
    dataDir: join(dir, 'data'),
    toolsFile,
    script: (name, tool, delayMs = 0) => {
      const file = join(dir, `${name}.json`);
      const first = { text: 'calling', tool_calls: [{ id: 'call_1', name: tool, arguments: { n: 1 } }], ...(delayMs ? { delay_ms: delayMs } : {}) };
      writeFileSync(file, JSON.stringify({ responses: [first, { text: 'All done.' }, { text: 'Second run.' }] }));
      return file;
    },
    runs: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function serveOn(d: DurableDir, script: string, extra: readonly string[] = [], env: Record<string, string> = {}): Promise<CliServer> {
  return startCli(['--port', '0', '--debug', '--data-dir', d.dataDir, '--script', script, '--tools', d.toolsFile, ...extra], env);
}

/** Polls until `check` holds (a restarted run finishes on its own clock); fails with the last value. */
export async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > end) throw new Error(`condition not met in ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((done) => setTimeout(done, 50));
    value = await read();
  }
  return value;
}

export const conversation = async (base: string, conv: string): Promise<any> => (await get(base, `/conversations/${conv}`)).body;

/** Starts a run in step mode with a client joined first; resolves at its first pause. */
export async function runToPause(base: string, wsBase: string, conv: string): Promise<{ ws: SemClient; pause: any }> {
  const ws = await SemClient.connect(`${wsBase}/ws?conv_id=${conv}`);
  expect((await post(base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
  const pause = await ws.next('debugger.pause');
  return { ws, pause };
}

/** A fresh dir per test, built CLI, and every server a test started killed after it. */
export function useDurableServers(): { readonly dir: () => DurableDir; readonly serve: typeof serveOn } {
  let d: DurableDir | undefined;
  const started: CliServer[] = [];
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => {
    d = createDurableDir();
  });
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
    d?.remove();
  });
  return {
    dir: () => d as DurableDir,
    serve: async (...args) => {
      const server = await serveOn(...args);
      started.push(server);
      return server;
    },
  };
}
