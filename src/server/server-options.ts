import type { Store } from '../core/store.js';
import type { TokenTable } from './auth.js';
import type { Profile } from './profiles.js';
import type { ToolSource } from './routes-tools.js';
import type { WebhooksConfig } from './webhooks/webhooks-config.js';

/** What `stepwise serve` takes for its server (docs/library.md, A server inside your app). */
export interface StepwiseServerOptions {
  /** Debug mode: the `/debug/*` routes and step mode. Default off. */
  readonly debug?: boolean;
  /** token → user. Default none: single-user, no token needed. */
  readonly tokens?: TokenTable;
  /** Browser origins allowed on the WebSocket besides the server's own. Default none. */
  readonly allowedOrigins?: readonly string[];
  /**
   * Without tokens, `Host` names (`name` or `name:port`) accepted besides `localhost`, `127.0.0.1` and
   * `[::1]`; others get 403 `host_not_allowed` (docs/protocol.md, Browsers). Default none.
   */
  readonly allowedHosts?: readonly string[];
  /** A WebSocket client's send budget before it is closed with 1013. Default 8 MiB. */
  readonly maxClientBufferBytes?: number;
  /** Messages (pings, pongs) a WebSocket client may send a second before it is closed with 1008. Default 50. */
  readonly maxClientMessagesPerSecond?: number;
  /** The dashboard's static folder. Default `src/dashboard`, found from this module. */
  readonly dashboardDir?: string;
  /** Profiles for `POST /chat/:profile` and `GET /profiles` (docs/protocol.md, Profiles file). Default none. */
  readonly profiles?: readonly Profile[];
  /** Where decisions are read from (the audit trail). Default the runtime's store, which every decision is written to. */
  readonly store?: Store;
  /** Where each tool comes from, by name, for `GET /tools` (`tools-file`, `mcp:<server>`). Default: all `built-in`. */
  readonly toolSources?: ReadonlyMap<string, ToolSource>;
  /** Told about every unexpected (500) error, e.g. to log it. */
  readonly onError?: (error: unknown) => void;
  /** Webhooks told of pauses, with signed links to answer them (docs/protocol.md, Webhooks and signed links). Default none. */
  readonly webhooks?: WebhooksConfig;
  /**
   * The URL approvers reach this server at, under which links are made (`<publicUrl>/a/<token>`), e.g.
   * `https://agent.example.com/agent`. Default: the attached server's own address and mount path.
   */
  readonly publicUrl?: string;
  /** Told about each failed webhook try (a line without secrets), e.g. to log it. Default: nowhere. */
  readonly onWebhookFailure?: (message: string) => void;
  /** Tries of one webhook event, the first included, before it is given up (if its deadline is not first). Default 20. */
  readonly webhookMaxAttempts?: number;
}
