import { ENGINE_CHOICES } from '../engines/select-engine.js';
import { DEFAULT_DATA_DIR, STORE_KINDS } from '../store/open-store.js';
import { REDIS_STORE_DEFAULTS } from '../store/redis/redis-store.js';

/** The providers' default models, which `--help` names. */
export interface ModelDefaults {
  readonly openai: string;
  readonly anthropic: string;
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

/** Every flag of `stepwise serve` (docs/protocol.md, Command line), in the order help lists them. */
export const FLAGS: readonly FlagSpec[] = [
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
  { name: 'max-agent-depth', arg: 'N', default: '4', help: 'how deep agents inside agents may go; a call that would start a child deeper is an error result' },
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
  {
    name: 'allowed-hosts',
    arg: 'LIST',
    default: 'none: only localhost, 127.0.0.1 and [::1], on any port',
    help: 'without auth tokens, comma-separated Host names (name or name:port, any case) also accepted; any other Host gets 403 host_not_allowed, against DNS rebinding (off with tokens)',
  },
  {
    name: 'webhooks',
    arg: 'FILE',
    default: 'none',
    help: 'JSON {"webhooks": [{url, secret, events?}], "link_secret"}: pause (and resume) events POSTed, signed, with one-click links signed with link_secret (required unless every webhook gets resume events only; docs/protocol.md, "Webhooks and signed links")',
  },
  {
    name: 'webhook-max-attempts',
    arg: 'N',
    default: '20',
    help: 'tries of one webhook event before it is given up, if the pause\'s deadline does not come first; a redirect counts as a failed try and is never followed',
  },
  { name: 'public-url', arg: 'URL', default: 'http://HOST:PORT as listening', help: 'the URL approvers reach this server at; signed links are made under it' },
  { name: 'insecure-no-auth', default: 'off', help: 'listen on a non-loopback host without auth tokens' },
  {
    name: 'store',
    arg: STORE_KINDS.join('|'),
    default: 'sqlite',
    help: 'where conversations, paused runs, checkpoints and decisions are kept; memory keeps nothing across restarts; redis is shared by every instance on it',
  },
  { name: 'data-dir', arg: 'DIR', default: DEFAULT_DATA_DIR, help: 'the SQLite store\'s folder (created); one server per folder' },
  { name: 'redis-url', arg: 'URL', default: `STEPWISE_REDIS_URL, else ${REDIS_STORE_DEFAULTS.url}`, help: 'the Redis of --store redis (redis:// or rediss://)' },
  {
    name: 'hibernate-after-ms',
    arg: 'MS',
    default: '2000 (sqlite, redis), never (memory)',
    help: 'with a durable store, a run paused longer than this leaves memory and is rebuilt from its checkpoint when the pause resolves; nothing a client sees changes',
  },
  { name: 'lease-ms', arg: 'MS', default: '5000', help: 'with --store redis, how long an instance owns its runs without renewing; another takes them over after it' },
  {
    name: 'max-frames-per-conversation',
    arg: 'N',
    default: 'every frame (sqlite, redis), 1000 (memory)',
    help: 'the newest frames the store keeps of each conversation (at least 1000, what /hydrate promises); older ones are deleted, so replay after a restart starts later; deleting a conversation deletes all of its rows',
  },
  { name: 'help', default: '', help: 'print this help and exit (also -h)' },
];

/** The environment variables stepwise reads, as help explains them. */
export const ENVIRONMENT: readonly (readonly [string, string])[] = [
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

