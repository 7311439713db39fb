import { parseArgs } from 'node:util';
import { ENGINE_CHOICES, type EngineChoice } from '../engines/select-engine.js';
import type { TimeoutAction } from '../streams/step-controller.js';

/** `stepwise serve` flags (SPEC §4), checked. */
export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  readonly engine: EngineChoice;
  readonly model?: string;
  readonly baseUrl?: string;
  readonly script?: string;
  readonly tools?: string;
  readonly debug: boolean;
  readonly pauseTimeoutMs: number;
  readonly pauseTimeoutAction: TimeoutAction;
  readonly maxIterations: number;
  readonly toolTimeoutMs: number;
  readonly maxParallelTools: number;
  readonly authTokens?: string;
  readonly allowedOrigins: readonly string[];
  readonly insecureNoAuth: boolean;
}

export const USAGE = `usage: stepwise serve [--host 127.0.0.1] [--port 3000] [--engine auto|scripted|openai|openai-responses|anthropic]
  [--model M] [--base-url URL] [--script FILE] [--tools FILE] [--debug] [--pause-timeout-ms 30000]
  [--pause-timeout-action continue|deny|abort] [--max-iterations 20] [--tool-timeout-ms 30000]
  [--max-parallel-tools 3] [--auth-tokens FILE] [--allowed-origins LIST] [--insecure-no-auth]

environment: STEPWISE_DEBUG=1 (debug mode), STEPWISE_AUTH_TOKENS="alice:tokenA,bob:tokenB",
  OPENAI_API_KEY, ANTHROPIC_API_KEY (provider keys are read from the environment only)`;

const string = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

/** Parses the flags after `serve`; throws a message naming the bad flag. */
export function parseServeOptions(argv: readonly string[]): ServeOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      host: string, port: string, engine: string, model: string, 'base-url': string, script: string, tools: string,
      debug: flag, 'pause-timeout-ms': string, 'pause-timeout-action': string, 'max-iterations': string,
      'tool-timeout-ms': string, 'max-parallel-tools': string, 'auth-tokens': string, 'allowed-origins': string,
      'insecure-no-auth': flag,
    },
  });
  const engine = values.engine ?? 'auto';
  if (!ENGINE_CHOICES.includes(engine as EngineChoice)) throw new Error(`--engine must be one of ${ENGINE_CHOICES.join(', ')}, got "${engine}"`);
  const action = values['pause-timeout-action'] ?? 'continue';
  if (!['continue', 'deny', 'abort'].includes(action)) throw new Error(`--pause-timeout-action must be continue, deny or abort, got "${action}"`);
  return {
    host: values.host ?? '127.0.0.1',
    port: integer('--port', values.port, 3000, 0, 65_535),
    engine: engine as EngineChoice,
    ...optional('model', values.model),
    ...optional('baseUrl', values['base-url']),
    ...optional('script', values.script),
    ...optional('tools', values.tools),
    debug: values.debug ?? false,
    pauseTimeoutMs: integer('--pause-timeout-ms', values['pause-timeout-ms'], 30_000, 0),
    pauseTimeoutAction: action as TimeoutAction,
    maxIterations: integer('--max-iterations', values['max-iterations'], 20, 1),
    toolTimeoutMs: integer('--tool-timeout-ms', values['tool-timeout-ms'], 30_000, 1),
    maxParallelTools: integer('--max-parallel-tools', values['max-parallel-tools'], 3, 1),
    ...optional('authTokens', values['auth-tokens']),
    allowedOrigins: (values['allowed-origins'] ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''),
    insecureNoAuth: values['insecure-no-auth'] ?? false,
  };
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}

function integer(name: string, raw: string | undefined, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}

/** Loopback hosts may run without tokens; anything else needs them or `--insecure-no-auth`. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
