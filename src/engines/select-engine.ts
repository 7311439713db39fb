import type { Engine } from '../core/engine.js';

export type EngineChoice = 'auto' | 'scripted' | 'openai' | 'openai-responses' | 'anthropic';
export const ENGINE_CHOICES: readonly EngineChoice[] = Object.freeze(['auto', 'scripted', 'openai', 'openai-responses', 'anthropic']);

export interface SelectEngineConfig {
  /** `--engine`. */
  readonly engine: EngineChoice;
  /** `--model`; each engine has its own default. */
  readonly model?: string;
  /** `--base-url`; otherwise `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` from `env`. */
  readonly baseUrl?: string;
  /** The environment (keys are read from here only, never from flags). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** SDK retries. Default: each engine's (2). */
  readonly maxRetries?: number;
}

/** What was picked and a sentence saying why, for the CLI to print. `scripted` is built by the caller. */
export type EngineSelection =
  | { readonly kind: 'scripted'; readonly reason: string }
  | { readonly kind: 'openai' | 'openai-responses' | 'anthropic'; readonly engine: Engine; readonly reason: string };

/**
 * Placeholder key for OpenAI-compatible local servers (Ollama, vLLM, llama.cpp), which ignore it;
 * the SDK refuses to start without some key.
 */
export const LOCAL_SERVER_API_KEY = 'not-needed';

/**
 * `--engine` (docs/protocol.md, Command line): `auto` picks OpenAI when `OPENAI_API_KEY` is set, else Anthropic when
 * `ANTHROPIC_API_KEY` is set, else the scripted demo. An explicit provider without a key fails,
 * except OpenAI engines given a base URL (a local compatible server needs no key).
 * A provider's module (and its SDK) is imported only when that provider is picked: loading the SDKs
 * would slow every start, the scripted demo's included.
 */
export async function selectEngine(config: SelectEngineConfig): Promise<EngineSelection> {
  if (!ENGINE_CHOICES.includes(config.engine)) {
    throw new Error(`unknown engine "${String(config.engine)}"; expected one of ${ENGINE_CHOICES.join(', ')}`);
  }
  const env = config.env;
  switch (config.engine) {
    case 'scripted':
      return { kind: 'scripted', reason: 'engine scripted: the built-in demo script and tools' };
    case 'auto':
      if (nonEmpty(env['OPENAI_API_KEY'])) return openai(config, 'openai', 'engine auto: OPENAI_API_KEY is set');
      if (nonEmpty(env['ANTHROPIC_API_KEY'])) return anthropic(config, 'engine auto: ANTHROPIC_API_KEY is set');
      return {
        kind: 'scripted',
        reason: 'engine auto: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set, so using the scripted demo engine',
      };
    case 'openai':
    case 'openai-responses':
      return openai(config, config.engine, `engine ${config.engine}`);
    case 'anthropic':
      return anthropic(config, 'engine anthropic');
  }
}

async function openai(config: SelectEngineConfig, kind: 'openai' | 'openai-responses', why: string): Promise<EngineSelection> {
  const baseURL = nonEmpty(config.baseUrl) ?? nonEmpty(config.env['OPENAI_BASE_URL']);
  const key = nonEmpty(config.env['OPENAI_API_KEY']);
  if (!key && !baseURL) {
    throw new Error(`--engine ${kind} needs OPENAI_API_KEY in the environment (or --base-url for a local compatible server)`);
  }
  const apiKey = key ?? LOCAL_SERVER_API_KEY;
  const common = { apiKey, baseURL, maxRetries: config.maxRetries };
  let engine: Engine;
  let model: string;
  if (kind === 'openai') {
    const { createOpenAIChatEngine, OPENAI_CHAT_DEFAULTS } = await import('./openai-chat.js');
    model = config.model ?? OPENAI_CHAT_DEFAULTS.model;
    engine = createOpenAIChatEngine({ ...common, model });
  } else {
    const { createOpenAIResponsesEngine, OPENAI_RESPONSES_DEFAULTS } = await import('./openai-responses.js');
    model = config.model ?? OPENAI_RESPONSES_DEFAULTS.model;
    engine = createOpenAIResponsesEngine({ ...common, model });
  }
  const api = kind === 'openai' ? 'OpenAI Chat Completions' : 'OpenAI Responses';
  const where = baseURL ? ` at ${baseURL}` : '';
  const keyNote = key ? '' : ' (no OPENAI_API_KEY: sending a placeholder key)';
  return { kind, engine, reason: `${why}: using ${api}${where}, model ${model}${keyNote}` };
}

async function anthropic(config: SelectEngineConfig, why: string): Promise<EngineSelection> {
  const apiKey = nonEmpty(config.env['ANTHROPIC_API_KEY']);
  if (!apiKey) throw new Error('--engine anthropic needs ANTHROPIC_API_KEY in the environment');
  const { createAnthropicEngine, ANTHROPIC_DEFAULTS } = await import('./anthropic.js');
  const baseURL = nonEmpty(config.baseUrl) ?? nonEmpty(config.env['ANTHROPIC_BASE_URL']);
  const model = config.model ?? ANTHROPIC_DEFAULTS.model;
  const engine = createAnthropicEngine({ apiKey, baseURL, model, maxRetries: config.maxRetries });
  const where = baseURL ? ` at ${baseURL}` : '';
  return { kind: 'anthropic', engine, reason: `${why}: using Anthropic Messages${where}, model ${model}` };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value : undefined;
}
