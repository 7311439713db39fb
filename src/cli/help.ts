import { ENVIRONMENT, FLAGS, type ModelDefaults } from './flags.js';

export type { ModelDefaults } from './flags.js';

/**
 * Read from the engine modules only when help is printed: importing one loads its SDK, and loading
 * both SDKs would weigh on every start, the scripted demo's included.
 */
export async function loadModelDefaults(): Promise<ModelDefaults> {
  const [{ OPENAI_CHAT_DEFAULTS }, { ANTHROPIC_DEFAULTS }] = await Promise.all([import('../engines/openai-chat.js'), import('../engines/anthropic.js')]);
  return { openai: OPENAI_CHAT_DEFAULTS.model, anthropic: ANTHROPIC_DEFAULTS.model };
}

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

