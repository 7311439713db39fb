import { parseArgs } from 'node:util';
import { ENGINE_CHOICES, type EngineChoice } from '../engines/select-engine.js';
import { DEFAULT_DATA_DIR, STORE_KINDS, type StoreKind } from '../store/open-store.js';
import type { TimeoutAction } from '../streams/step-controller.js';
import { FLAGS } from './flags.js';

/**
 * What `/hydrate` promises to keep of each conversation (docs/protocol.md, Durability): the least
 * `--max-frames-per-conversation` takes.
 */
const MIN_FRAMES_KEPT = 1000;

/** The environment as the CLI reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

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
  readonly maxAgentDepth: number;
  readonly authTokens?: string;
  readonly allowedOrigins: readonly string[];
  /** `--allowed-hosts`: Host names accepted without tokens besides the loopback ones (docs/protocol.md, Browsers). */
  readonly allowedHosts: readonly string[];
  /** `--webhooks FILE` (docs/protocol.md, Webhooks and signed links). */
  readonly webhooks?: string;
  /** `--webhook-max-attempts`: tries of one webhook event. */
  readonly webhookMaxAttempts: number;
  /** `--public-url`: where links point; absent, the listening address. */
  readonly publicUrl?: string;
  readonly insecureNoAuth: boolean;
  readonly store: StoreKind;
  readonly dataDir: string;
  /** `--hibernate-after-ms`; when absent, the runtime's default for its store. */
  readonly hibernateAfterMs?: number;
  /** `--redis-url`; when absent, main reads `STEPWISE_REDIS_URL`, else the store's default. */
  readonly redisUrl?: string;
  /** How long an instance owns a run without renewing its lease (docs/protocol.md, Several instances). */
  readonly leaseMs: number;
  /** The newest frames kept per conversation in the store; absent: every frame (memory: 1000). */
  readonly maxFramesPerConversation?: number;
}

/** A usage mistake: the message is printed with a pointer to `--help`, and the process exits 1. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The flags after `serve` as given, each by its name; throws a UsageError naming an unknown or malformed one. */
function readFlags(argv: readonly string[]): Record<string, string | boolean | undefined> {
  const options = Object.fromEntries(FLAGS.map((flag) => [flag.name, { type: flag.arg ? 'string' : 'boolean' }])) as Record<
    string,
    { type: 'string' | 'boolean'; short?: string }
  >;
  options['help'] = { type: 'boolean', short: 'h' };
  try {
    return parseArgs({ args: [...argv], strict: true, allowPositionals: false, options }).values;
  } catch (error) {
    throw new UsageError(parseArgsMessage(error));
  }
}

/** Parses the flags after `serve`; `'help'` when help was asked for; throws a UsageError naming a bad flag. */
export function parseServeOptions(argv: readonly string[]): ServeOptions | 'help' {
  const values = readFlags(argv);
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
  const hibernateAfter = text('hibernate-after-ms');
  const redisUrl = text('redis-url');
  const publicUrl = text('public-url')?.replace(/\/+$/, '');
  if (publicUrl !== undefined && !/^https?:\/\/./.test(publicUrl)) throw new UsageError(`--public-url must be an http:// or https:// URL, got "${publicUrl}"`);
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
    maxAgentDepth: integer('--max-agent-depth', text('max-agent-depth'), 4, 0),
    ...optional('authTokens', text('auth-tokens')),
    allowedOrigins: (text('allowed-origins') ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''),
    allowedHosts: allowedHostsOf(text('allowed-hosts')),
    ...optional('webhooks', text('webhooks')),
    webhookMaxAttempts: integer('--webhook-max-attempts', text('webhook-max-attempts'), 20, 1),
    ...optional('publicUrl', publicUrl),
    insecureNoAuth: on('insecure-no-auth'),
    store: store as StoreKind,
    dataDir,
    ...optional('redisUrl', redisUrl),
    leaseMs: integer('--lease-ms', text('lease-ms'), 5000, 100),
    ...(hibernateAfter === undefined ? {} : { hibernateAfterMs: integer('--hibernate-after-ms', hibernateAfter, 0, 0) }),
    ...(maxFrames === undefined ? {} : { maxFramesPerConversation: integer('--max-frames-per-conversation', maxFrames, 0, MIN_FRAMES_KEPT) }),
  };
}

/** `--allowed-hosts a.example,b.example:8080`, each entry a host name with or without a port. */
function allowedHostsOf(list: string | undefined): string[] {
  const hosts = (list ?? '').split(',').map((host) => host.trim()).filter((host) => host !== '');
  const bad = hosts.find((host) => !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$/.test(host));
  if (bad !== undefined) throw new UsageError(`--allowed-hosts takes host names with or without :port, got "${bad}"`);
  return hosts;
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
