import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { config as rxjsConfig } from 'rxjs';
import type { Engine } from '../core/engine.js';
import { createScriptedEngine, parseScript, type Script } from '../engines/scripted.js';
import { selectEngine, type EngineChoice, type EngineSelection } from '../engines/select-engine.js';
import type { StepwiseConfig } from '../sessions/runtime.js';
import { toTool, type Tool, type ToolDefinition } from '../tools/define-tool.js';
import { createServer } from '../server/app.js';
import { parseTokens } from '../server/auth.js';
import { profileChoices, type Profile } from '../server/profiles.js';
import type { Store } from '../core/store.js';
import { asServiceStore, type ClusterStore } from '../cluster/index.js';
import { openStore } from '../store/open-store.js';
import { printableUrl, REDIS_STORE_DEFAULTS } from '../store/redis/index.js';
import { isLoopback, loadModelDefaults, mainHelp, parseServeOptions, serveHelp, UsageError, type ServeOptions } from './options.js';
import { createDemoScript, createDemoTools } from './demo.js';
import { packageVersion } from './package-info.js';
import { readProfilesFile, toProfiles } from './profiles-file.js';
import { announceToRuns } from '../sessions/announce.js';
import { exportTracesFromEnv } from '../telemetry/otlp-export.js';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The `stepwise` command: `serve` runs the server until SIGINT or SIGTERM; `--help` and `--version`
 * print and return. Throws on a usage mistake (the message says where to look) or a bad file.
 */
export async function main(argv: readonly string[], env: Env = process.env): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(mainHelp(await loadModelDefaults()));
    return;
  }
  if (command === '--version' || command === '-v') {
    console.log(packageVersion());
    return;
  }
  if (command !== 'serve') {
    const what = command.startsWith('-') ? `unknown option "${command}"` : `unknown command "${command}"`;
    throw new Error(`${what}; run "stepwise --help" for the commands and flags`);
  }
  let options: ServeOptions | 'help';
  try {
    options = parseServeOptions(rest);
  } catch (error) {
    if (error instanceof UsageError) throw new Error(`${error.message}; run "stepwise serve --help" for every flag`);
    throw error;
  }
  if (options === 'help') {
    console.log(serveHelp(await loadModelDefaults()));
    return;
  }
  await serve(options, env);
}

async function serve(options: ServeOptions, env: Env): Promise<void> {
  const tokens = await loadTokens(options, env);
  if (tokens.size === 0 && !isLoopback(options.host) && !options.insecureNoAuth) {
    throw new Error(
      `refusing to listen on ${options.host} without auth tokens: set STEPWISE_AUTH_TOKENS or --auth-tokens FILE, or pass --insecure-no-auth`,
    );
  }
  const script = options.script ? await loadScript(options.script) : undefined;
  const { engine, scripted } = await buildEngine(options, env, script, {});
  const ownTools = await chooseTools(options, scripted);
  // MCP's SDK and OpenTelemetry's are imported only when asked for: they took 0.5-1 s of every start (`restart_recover`).
  const mcp = options.mcp ? await (await import('./mcp-file.js')).startMcpServers(options.mcp, ownTools) : undefined;
  const tools = [...ownTools, ...(mcp?.tools ?? [])];
  const profileEngine: ProfileEngineOf = async (choice, slug) => (await buildEngine(options, env, script, choice, slug)).engine;
  const profiles = options.profiles ? await loadProfiles(options.profiles, tools, profileEngine) : [];
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
  // Opened last, once every file has been read: a refused start holds no lock. A locked or unreadable
  // store throws here with a message naming the dir (and the holder's pid); bin/stepwise.js exits 1 with it.
  const opened = openServerStore(options, env);
  // Redis is shared by every instance of the service (docs/protocol.md, Several instances): a runtime on it joins the service.
  const store = isClusterStore(opened) ? asServiceStore(opened, { redisUrl: redisUrlOf(options, env), leaseMs: options.leaseMs, log: (line: string) => console.log(line) }) : opened;
  // Registered before the runtime starts, so its first run is traced.
  const traces = await exportTracesFromEnv(env);
  if (traces) console.log(`traces: exported over OTLP to ${traces.endpoint}`);
  const stopEdges = async (): Promise<void> => {
    await mcp?.close();
    await traces?.shutdown();
  };
  const server = createServer({
    runtime: { ...runtime, store },
    // The audit trail route reads the same store the runtime writes.
    store,
    debug,
    tokens,
    allowedOrigins: options.allowedOrigins,
    ...(profiles.length > 0 ? { profiles } : {}),
    toolSources: toolSourcesOf(options.tools ? ownTools : [], mcp?.servers ?? []),
    onError: (error) => console.error('stepwise: unexpected error:', error),
  });
  // A server that dies while serving: the runs in progress hear of it (stderr already has).
  mcp?.down$.subscribe(({ server: name, tools: withdrawn, message }) => announceToRuns(server.stepwise, { level: 'warn', message, fields: { mcp_server: name, withdrawn } }));
  try {
    const bySlug = new Map(profiles.map((profile) => [profile.slug, profile]));
    const recovered = await server.stepwise.recover({
      choicesFor: (slug) => {
        const profile = bySlug.get(slug);
        return profile && profileChoices(profile);
      },
    });
    if (recovered.conversations > 0) {
      console.log(`store: ${recovered.conversations} conversation(s) restored, ${recovered.runs} run(s) resumed (${recovered.pauses} paused)`);
    }
    await new Promise<void>((done, fail) => {
      server.http.once('error', fail);
      server.http.listen(options.port, options.host, () => {
        server.http.off('error', fail);
        // A listening server's own errors (out of file descriptors under a connection flood) are logged, never fatal.
        server.http.on('error', (error) => console.error('stepwise: server error:', error));
        done();
      });
    });
  } catch (error) {
    await server.close();
    await store.close();
    await stopEdges();
    throw error;
  }
  const { port } = server.http.address() as AddressInfo;
  const host = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  if (debug) console.log('debug mode: /debug/* routes and step mode are on');
  if (tokens.size > 0) console.log(`auth: ${tokens.size} token(s) configured`);
  console.log(`stepwise listening on http://${host}:${port}`);
  stopOnSignals(async () => {
    // A durable store keeps the runs for the next start (docs/protocol.md, Durability); memory has nowhere to keep them.
    if (store.durable) await server.stepwise.suspend();
    await server.close();
    await store.close();
    // Last: the spans of the runs stopped above are flushed, and MCP server processes end.
    await stopEdges();
  });
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

function redisUrlOf(options: ServeOptions, env: Env): string {
  return options.redisUrl ?? (env['STEPWISE_REDIS_URL'] || REDIS_STORE_DEFAULTS.url);
}

function isClusterStore(store: Store): store is ClusterStore {
  return typeof (store as Partial<ClusterStore>).tail$ === 'function';
}

/** `--store`, `--data-dir` and `--redis-url` (or STEPWISE_REDIS_URL), said in the CLI's words. */
const retentionOf = ({ maxFramesPerConversation }: ServeOptions): { maxFramesPerConversation?: number } =>
  maxFramesPerConversation === undefined ? {} : { maxFramesPerConversation };

function openServerStore(options: ServeOptions, env: Env): Store {
  if (options.store === 'redis') {
    const redisUrl = redisUrlOf(options, env);
    // An unreachable Redis fails the first read (recovery, below): exit 1 with a StoreUnavailableError.
    const store = openStore({ kind: 'redis', redisUrl, ...retentionOf(options) });
    console.log(`store: redis at ${printableUrl(redisUrl)}`);
    return store;
  }
  const store = openStore({ kind: options.store, dataDir: options.dataDir, ...retentionOf(options) });
  console.log(store.durable ? `store: ${options.store} in ${resolve(options.dataDir)}` : `store: ${options.store} (nothing survives a restart)`);
  return store;
}

async function loadTokens(options: ServeOptions, env: Env): Promise<Map<string, string>> {
  const fromEnv = env['STEPWISE_AUTH_TOKENS'] ? parseTokens(env['STEPWISE_AUTH_TOKENS']) : new Map<string, string>();
  if (!options.authTokens) return fromEnv;
  const fromFile = parseTokens(await readFile(options.authTokens, 'utf8'));
  return new Map([...fromEnv, ...fromFile]);
}

/** A selected engine, and whether it is the scripted one (the demo's tools go with it). */
interface BuiltEngine {
  readonly engine: Engine;
  readonly scripted: boolean;
}

/**
 * The server's engine, or a profile's (`choice` from its `engine` and `model`, on top of the flags).
 * Says what it picked and why. Scripted engines play `--script` when given, else the demo script.
 */
async function buildEngine(options: ServeOptions, env: Env, script: Script | undefined, choice: EngineChoices, slug?: string): Promise<BuiltEngine> {
  const who = slug === undefined ? '' : `profile ${slug}: `;
  const model = choice.model ?? options.model;
  let selection: EngineSelection;
  try {
    selection = await selectEngine({
      engine: choice.engine ?? options.engine,
      env,
      ...(model ? { model } : {}),
      ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    });
  } catch (error) {
    throw new Error(`${who}${(error as Error).message}`);
  }
  if (selection.kind !== 'scripted') {
    console.log(`${who}${selection.reason}`);
    return { engine: selection.engine, scripted: false };
  }
  if (!script) {
    console.log(`${who}${selection.reason}${options.tools ? ' (tools from --tools)' : ''}`);
    return { engine: createScriptedEngine(createDemoScript()), scripted: true };
  }
  console.log(`${who}engine scripted: ${script.responses.length} responses from ${options.script}`);
  return { engine: createScriptedEngine(script), scripted: true };
}

async function loadScript(file: string): Promise<Script> {
  try {
    return parseScript(JSON.parse(await readFile(file, 'utf8')) as unknown);
  } catch (error) {
    throw new Error(`--script ${file}: ${(error as Error).message}`);
  }
}

/**
 * `--tools FILE` when given; else the demo tools with the scripted demo, or for a real model only when
 * `--demo-tools` asks (a real model must not be offered a fake `get_weather` by surprise).
 */
/** `GET /tools`'s `source` of each tool not built in: the tools file's, each MCP server's. */
function toolSourcesOf(fileTools: readonly Tool[], servers: readonly { name: string; tools: readonly string[] }[]): Map<string, string> {
  const sources = new Map<string, string>(fileTools.map((tool) => [tool.name, 'tools-file']));
  for (const server of servers) for (const name of server.tools) sources.set(name, `mcp:${server.name}`);
  return sources;
}

async function chooseTools(options: ServeOptions, scripted: boolean): Promise<Tool[]> {
  if (options.tools) return loadTools(options.tools);
  if (scripted || options.demoTools) return createDemoTools();
  console.log('tools: none (a real model is offered the demo tools only with --demo-tools; your own with --tools FILE)');
  return [];
}

type EngineChoices = { readonly engine?: EngineChoice; readonly model?: string };
type ProfileEngineOf = (choice: EngineChoices, slug: string) => Promise<Engine>;

/** `--profiles FILE`: checked against the server's tools, each profile's own engine built now. */
async function loadProfiles(file: string, tools: readonly Tool[], engineOf: ProfileEngineOf): Promise<Profile[]> {
  const entries = await readProfilesFile(file, tools.map((tool) => tool.name));
  const profiles = await toProfiles(entries, async (choice, slug) => {
    try {
      return await engineOf(choice, slug);
    } catch (error) {
      throw new Error(`--profiles ${file}: ${(error as Error).message}`);
    }
  });
  console.log(`profiles: ${profiles.map((profile) => profile.slug).join(', ') || 'none'} from ${file}`);
  return profiles;
}

/** A tools file: an ES module whose default export is an array of tools (docs/protocol.md, Tools file). */
async function loadTools(file: string): Promise<Tool[]> {
  const module = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  if (!Array.isArray(module.default)) throw new Error(`--tools ${file}: the default export must be an array of tools`);
  return module.default.map((candidate: unknown) => toTool(candidate as Tool | ToolDefinition));
}
