import { parseArgs } from 'node:util';
import { ENGINE_CHOICES, type EngineChoice } from '../engines/select-engine.js';
import { DEFAULT_DATA_DIR, STORE_KINDS, type StoreKind } from '../store/open-store.js';
import { REDIS_STORE_DEFAULTS } from '../store/redis/redis-store.js';
import type { TimeoutAction } from '../streams/step-controller.js';

/**
 * What `/hydrate` promises to keep of each conversation (docs/protocol.md, Durability): the least
 * `--max-frames-per-conversation` takes.
 */
const MIN_FRAMES_KEPT = 1000;

/** `stepwise serve` flags (docs/protocol.md, Command line), checked. */
export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  readonly engine: EngineChoice;
  readonly model?: string;
  readonly baseUrl?: string;
  readonly script?: string;
  readonly tools?: string;
  /** Offer the demo tools to a real model too (they are always on with the scripted demo). */
  readonly demoTools: boolean;
  readonly profiles?: string;
  /** MCP servers whose tools join the server's (docs/protocol.md, MCP servers file). */
  readonly mcp?: string;
  readonly debug: boolean;
  readonly pauseTimeoutMs: number;
  readonly pauseTimeoutAction: TimeoutAction;
  readonly maxIterations: number;
  readonly toolTimeoutMs: number;
  readonly maxParallelTools: number;
  readonly authTokens?: string;
  readonly allowedOrigins: readonly string[];
  readonly insecureNoAuth: boolean;
  readonly store: StoreKind;
  readonly dataDir: string;
  /** `--redis-url`; when absent, main reads `STEPWISE_REDIS_URL`, else the store's default. */
  readonly redisUrl?: string;
  /** How long an instance owns a run without renewing its lease (docs/protocol.md, Several instances). */
  readonly leaseMs: number;
  /** The newest frames kept per conversation in the store; absent: every frame (memory: 1000). */
  readonly maxFramesPerConversation?: number;
}

/** One flag: how it parses and how `--help` explains it. The help and the parser both read this table. */
interface FlagSpec {
  readonly name: string;
  /** The value's placeholder; absent for a boolean switch. */
  readonly arg?: string;
  /** A function when it names what only help may load (the providers' default models). */
  readonly default?: string | ((models: ModelDefaults) => string);
  readonly help: string;
}

const FLAGS: readonly FlagSpec[] = [
  { name: 'host', arg: 'HOST', default: '127.0.0.1', help: 'interface to listen on; a non-loopback host needs auth tokens or --insecure-no-auth' },
  { name: 'port', arg: 'PORT', default: '3000', help: 'port to listen on; 0 picks a free one (the ready line names it)' },
  {
    name: 'engine',
    arg: ENGINE_CHOICES.join('|'),
    default: 'auto',
    help: 'the model behind every run; auto: OpenAI when OPENAI_API_KEY is set, else Anthropic when ANTHROPIC_API_KEY is set, else the scripted demo',
  },
  {
    name: 'model',
    arg: 'MODEL',
    default: (models) => `${models.openai} for OpenAI, ${models.anthropic} for Anthropic`,
    help: 'the provider model',
  },
  {
    name: 'base-url',
    arg: 'URL',
    default: "OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the provider's",
    help: 'provider API base URL, e.g. an OpenAI-compatible local server (http://127.0.0.1:11434/v1)',
  },
  { name: 'script', arg: 'FILE', default: 'the built-in demo script', help: 'JSON script for the scripted engine (docs/protocol.md, "Script file")' },
  {
    name: 'tools',
    arg: 'FILE',
    default: 'the demo tools with the scripted engine, none with a real one',
    help: 'ES module whose default export is an array of tools (docs/protocol.md, "Tools file")',
  },
  { name: 'demo-tools', default: 'off', help: 'offer the demo tools (get_weather, calculator, search) to a real model too' },
  { name: 'profiles', arg: 'FILE', default: 'none', help: 'JSON profiles for POST /chat/:profile and GET /profiles (docs/protocol.md, "Profiles file")' },
  {
    name: 'mcp',
    arg: 'FILE',
    default: 'none',
    help: 'MCP servers whose tools join the server\'s, in the common {"mcpServers": {name: {command, args?, env?} | {url}}} format; one that fails to start is reported and skipped',
  },
  { name: 'debug', default: 'off', help: 'debug mode: the /debug/* routes and step mode (also STEPWISE_DEBUG=1)' },
  { name: 'pause-timeout-ms', arg: 'MS', default: '30000', help: 'how long a pause waits for a decision before its timeout action' },
  { name: 'pause-timeout-action', arg: 'continue|deny|abort', default: 'continue', help: 'what a pause does at its deadline (abort ends the run as failed)' },
  { name: 'max-iterations', arg: 'N', default: '20', help: 'inferences per run before it ends with status max_iterations' },
  { name: 'tool-timeout-ms', arg: 'MS', default: '30000', help: "per tool call; the tool's AbortSignal fires at the timeout" },
  { name: 'max-parallel-tools', arg: 'N', default: '3', help: 'tool calls of one inference run at once' },
  {
    name: 'auth-tokens',
    arg: 'FILE',
    default: 'none',
    help: 'bearer tokens, one name:token per line (# comments); added to STEPWISE_AUTH_TOKENS; with any token every API route needs one',
  },
  {
    name: 'allowed-origins',
    arg: 'LIST',
    default: "none: only the server's own origin",
    help: 'comma-separated browser origins also allowed on the WebSocket (* for any)',
  },
  { name: 'insecure-no-auth', default: 'off', help: 'listen on a non-loopback host without auth tokens' },
  {
    name: 'store',
    arg: STORE_KINDS.join('|'),
    default: 'sqlite',
    help: 'where conversations, paused runs, checkpoints and decisions are kept; memory keeps nothing across restarts; redis is shared by every instance on it',
  },
  { name: 'data-dir', arg: 'DIR', default: DEFAULT_DATA_DIR, help: 'the SQLite store\'s folder (created); one server per folder' },
  { name: 'redis-url', arg: 'URL', default: `STEPWISE_REDIS_URL, else ${REDIS_STORE_DEFAULTS.url}`, help: 'the Redis of --store redis (redis:// or rediss://)' },
  { name: 'lease-ms', arg: 'MS', default: '5000', help: 'with --store redis, how long an instance owns its runs without renewing; another takes them over after it' },
  {
    name: 'max-frames-per-conversation',
    arg: 'N',
    default: 'every frame (sqlite, redis), 1000 (memory)',
    help: 'the newest frames the store keeps of each conversation (at least 1000, what /hydrate promises); older ones are deleted, so replay after a restart starts later; deleting a conversation deletes all of its rows',
  },
  { name: 'help', default: '', help: 'print this help and exit (also -h)' },
];

const ENVIRONMENT: readonly (readonly [string, string])[] = [
  ['OPENAI_API_KEY', 'key for --engine openai and openai-responses; --engine auto picks OpenAI when it is set'],
  ['OPENAI_BASE_URL', 'base URL of the OpenAI engines when --base-url is not given'],
  ['ANTHROPIC_API_KEY', 'key for --engine anthropic; --engine auto picks Anthropic when it is set (and no OpenAI key)'],
  ['ANTHROPIC_BASE_URL', 'base URL of the Anthropic engine when --base-url is not given'],
  ['STEPWISE_DEBUG', '1 or true: debug mode, as --debug'],
  ['STEPWISE_AUTH_TOKENS', 'bearer tokens "alice:tokenA,bob:tokenB", merged with --auth-tokens FILE'],
  ['STEPWISE_REDIS_URL', 'the Redis of --store redis when --redis-url is not given'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'when set, traces (runs, inferences, tool calls, pauses) are exported there over OTLP/HTTP'],
  ['OTEL_SERVICE_NAME', 'the service name on exported traces (default stepwise)'],
];

const WIDTH = 110;

/** `left` padded to `indent`, then `text` word-wrapped to WIDTH with hanging lines at `indent`. */
function entry(left: string, text: string, indent: number): string {
  const lines = [left.length < indent ? left.padEnd(indent) : `${left}\n${' '.repeat(indent)}`];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    const line = lines[last] as string;
    const width = line.length - line.lastIndexOf('\n') - 1;
    if (width > indent && width + 1 + word.length > WIDTH) lines.push(`${' '.repeat(indent)}${word}`);
    else lines[last] = `${line}${width > indent ? ' ' : ''}${word}`;
  }
  return lines.join('\n');
}

/** The providers' default models, which `--help` names. */
export interface ModelDefaults {
  readonly openai: string;
  readonly anthropic: string;
}

/**
 * Read from the engine modules only when help is printed: importing one loads its SDK, and the
 * two SDKs took 0.6-0.8 s CPU of every start (`restart_recover`), the scripted demo's included.
 */
export async function loadModelDefaults(): Promise<ModelDefaults> {
  const [{ OPENAI_CHAT_DEFAULTS }, { ANTHROPIC_DEFAULTS }] = await Promise.all([import('../engines/openai-chat.js'), import('../engines/anthropic.js')]);
  return { openai: OPENAI_CHAT_DEFAULTS.model, anthropic: ANTHROPIC_DEFAULTS.model };
}

function flagLines(models: ModelDefaults): string {
  return FLAGS.map((flag) => {
    const left = `  --${flag.name}${flag.arg ? ` ${flag.arg}` : ''}`;
    const fallback = typeof flag.default === 'function' ? flag.default(models) : flag.default;
    return entry(left, `${flag.help}${fallback ? `. Default: ${fallback}.` : '.'}`, 34);
  }).join('\n');
}

function environmentLines(): string {
  return ENVIRONMENT.map(([name, meaning]) => entry(`  ${name}`, `${meaning}.`, 32)).join('\n');
}

/** `stepwise serve --help`. */
export function serveHelp(models: ModelDefaults): string {
  return `usage: stepwise serve [options]

Runs the HTTP + WebSocket server and its dashboard (GET /). Prints "stepwise listening on http://HOST:PORT"
when ready. SIGINT or SIGTERM exits 0: with a durable store (sqlite, redis) the runs are suspended and go on at the next
start, paused ones still paused; with --store memory they are cancelled.

options:
${flagLines(models)}

environment (read by stepwise; provider keys come from the environment only, never from flags):
${environmentLines()}

The HTTP and WebSocket protocol and the file formats: docs/protocol.md in the package.`;
}

/** `stepwise --help`: the commands, then everything `serve` takes. */
export function mainHelp(models: ModelDefaults): string {
  return `usage: stepwise <command> [options]

commands:
  serve                           run the server and its dashboard (flags below)

  -h, --help                      print this help and exit
  -v, --version                   print the version and exit

${serveHelp(models)}`;
}

/** A usage mistake: the message is printed with a pointer to `--help`, and the process exits 1. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Parses the flags after `serve`; `'help'` when help was asked for; throws a UsageError naming a bad flag. */
export function parseServeOptions(argv: readonly string[]): ServeOptions | 'help' {
  const options = Object.fromEntries(FLAGS.map((flag) => [flag.name, { type: flag.arg ? 'string' : 'boolean' }])) as Record<
    string,
    { type: 'string' | 'boolean'; short?: string }
  >;
  options['help'] = { type: 'boolean', short: 'h' };
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], strict: true, allowPositionals: false, options }));
  } catch (error) {
    throw new UsageError(parseArgsMessage(error));
  }
  if (values['help'] === true) return 'help';
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const on = (name: string): boolean => values[name] === true;
  const engine = text('engine') ?? 'auto';
  if (!ENGINE_CHOICES.includes(engine as EngineChoice)) throw new UsageError(`--engine must be one of ${ENGINE_CHOICES.join(', ')}, got "${engine}"`);
  const action = text('pause-timeout-action') ?? 'continue';
  if (!['continue', 'deny', 'abort'].includes(action)) throw new UsageError(`--pause-timeout-action must be continue, deny or abort, got "${action}"`);
  const store = text('store') ?? 'sqlite';
  if (!STORE_KINDS.includes(store as StoreKind)) throw new UsageError(`--store must be one of ${STORE_KINDS.join(', ')}, got "${store}"`);
  const dataDir = text('data-dir') ?? DEFAULT_DATA_DIR;
  if (dataDir.trim() === '') throw new UsageError('--data-dir needs a folder');
  const maxFrames = text('max-frames-per-conversation');
  const redisUrl = text('redis-url');
  if (redisUrl !== undefined && !/^rediss?:\/\/./.test(redisUrl)) throw new UsageError(`--redis-url must be a redis:// or rediss:// URL, got "${redisUrl}"`);
  return {
    host: text('host') ?? '127.0.0.1',
    port: integer('--port', text('port'), 3000, 0, 65_535),
    engine: engine as EngineChoice,
    ...optional('model', text('model')),
    ...optional('baseUrl', text('base-url')),
    ...optional('script', text('script')),
    ...optional('tools', text('tools')),
    demoTools: on('demo-tools'),
    ...optional('profiles', text('profiles')),
    ...optional('mcp', text('mcp')),
    debug: on('debug'),
    pauseTimeoutMs: integer('--pause-timeout-ms', text('pause-timeout-ms'), 30_000, 0),
    pauseTimeoutAction: action as TimeoutAction,
    maxIterations: integer('--max-iterations', text('max-iterations'), 20, 1),
    toolTimeoutMs: integer('--tool-timeout-ms', text('tool-timeout-ms'), 30_000, 1),
    maxParallelTools: integer('--max-parallel-tools', text('max-parallel-tools'), 3, 1),
    ...optional('authTokens', text('auth-tokens')),
    allowedOrigins: (text('allowed-origins') ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''),
    insecureNoAuth: on('insecure-no-auth'),
    store: store as StoreKind,
    dataDir,
    ...optional('redisUrl', redisUrl),
    leaseMs: integer('--lease-ms', text('lease-ms'), 5000, 100),
    ...(maxFrames === undefined ? {} : { maxFramesPerConversation: integer('--max-frames-per-conversation', maxFrames, 0, MIN_FRAMES_KEPT) }),
  };
}

/** node:util's parseArgs messages, said in the CLI's words (they suggest `--` quoting, which never helps here). */
function parseArgsMessage(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const quoted = /'([^' ]*)/.exec(message ?? '')?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option "${quoted}"`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument "${quoted}" (serve takes flags only)`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return /argument missing/.test(message ?? '') ? `${quoted} needs a value` : `${quoted} takes no value`;
  }
  return message ?? String(error);
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}

function integer(name: string, raw: string | undefined, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) throw new UsageError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}

/** Loopback hosts may run without tokens; anything else needs them or `--insecure-no-auth`. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
