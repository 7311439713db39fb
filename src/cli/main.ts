import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { config as rxjsConfig } from 'rxjs';
import type { Engine } from '../core/engine.js';
import { createScriptedEngine, parseScript } from '../engines/scripted.js';
import { selectEngine } from '../engines/select-engine.js';
import type { StepwiseConfig } from '../sessions/runtime.js';
import { toTool, type Tool, type ToolDefinition } from '../tools/define-tool.js';
import { createServer } from '../server/app.js';
import { parseTokens } from '../server/auth.js';
import { isLoopback, parseServeOptions, USAGE, type ServeOptions } from './options.js';
import { createDemoScript, createDemoTools } from './demo.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The `stepwise` command: `serve` runs the server until SIGINT or SIGTERM. */
export async function main(argv: readonly string[], env: Env = process.env): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return;
  }
  if (command !== 'serve') throw new Error(`unknown command "${command}"\n${USAGE}`);
  await serve(parseServeOptions(rest), env);
}

async function serve(options: ServeOptions, env: Env): Promise<void> {
  const tokens = await loadTokens(options, env);
  if (tokens.size === 0 && !isLoopback(options.host) && !options.insecureNoAuth) {
    throw new Error(
      `refusing to listen on ${options.host} without auth tokens: set STEPWISE_AUTH_TOKENS or --auth-tokens FILE, or pass --insecure-no-auth`,
    );
  }
  const engine = await loadEngine(options, env);
  const tools = options.tools ? await loadTools(options.tools) : createDemoTools();
  const runtime: StepwiseConfig = {
    engine,
    tools,
    pauseTimeoutMs: options.pauseTimeoutMs,
    timeoutAction: options.pauseTimeoutAction,
    maxIterations: options.maxIterations,
    toolTimeoutMs: options.toolTimeoutMs,
    maxParallelTools: options.maxParallelTools,
  };
  const debug = options.debug || env['STEPWISE_DEBUG'] === '1' || env['STEPWISE_DEBUG'] === 'true';
  const server = createServer({
    runtime,
    debug,
    tokens,
    allowedOrigins: options.allowedOrigins,
    onError: (error) => console.error('stepwise: unexpected error:', error),
  });
  await new Promise<void>((done, fail) => {
    server.http.once('error', fail);
    server.http.listen(options.port, options.host, () => done());
  });
  const { port } = server.http.address() as AddressInfo;
  const host = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  if (debug) console.log('debug mode: /debug/* routes and step mode are on');
  if (tokens.size > 0) console.log(`auth: ${tokens.size} token(s) configured`);
  console.log(`stepwise listening on http://${host}:${port}`);
  stopOnSignals(server.close);
  keepServingOnStrayErrors();
}

/**
 * A bug in a subscriber (RxJS rethrows it on a timer) or a forgotten promise must not take every
 * conversation down: log it loudly and keep serving. Only the CLI, the process's owner, does this.
 */
function keepServingOnStrayErrors(): void {
  rxjsConfig.onUnhandledError = (error: unknown) => console.error('stepwise: unhandled error in a stream:', error);
  process.on('unhandledRejection', (reason) => console.error('stepwise: unhandled promise rejection:', reason));
}

function stopOnSignals(close: () => Promise<void>): void {
  const stop = (): void => {
    // A second signal, or a close that hangs, still ends the process.
    setTimeout(() => process.exit(0), 5000).unref();
    void close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function loadTokens(options: ServeOptions, env: Env): Promise<Map<string, string>> {
  const fromEnv = env['STEPWISE_AUTH_TOKENS'] ? parseTokens(env['STEPWISE_AUTH_TOKENS']) : new Map<string, string>();
  if (!options.authTokens) return fromEnv;
  const fromFile = parseTokens(await readFile(options.authTokens, 'utf8'));
  return new Map([...fromEnv, ...fromFile]);
}

async function loadEngine(options: ServeOptions, env: Env): Promise<Engine> {
  const selection = selectEngine({
    engine: options.engine,
    env,
    ...(options.model ? { model: options.model } : {}),
    ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
  });
  if (selection.kind !== 'scripted') {
    console.log(selection.reason);
    return selection.engine;
  }
  if (!options.script) {
    console.log(`${selection.reason}${options.tools ? ' (tools from --tools)' : ''}`);
    return createScriptedEngine(createDemoScript());
  }
  const script = parseScript(JSON.parse(await readFile(options.script, 'utf8')) as unknown);
  console.log(`engine scripted: ${script.responses.length} responses from ${options.script}`);
  return createScriptedEngine(script);
}

/** A tools file: an ES module whose default export is an array of tools (SPEC §4). */
async function loadTools(file: string): Promise<Tool[]> {
  const module = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  if (!Array.isArray(module.default)) throw new Error(`--tools ${file}: the default export must be an array of tools`);
  return module.default.map((candidate: unknown) => toTool(candidate as Tool | ToolDefinition));
}
