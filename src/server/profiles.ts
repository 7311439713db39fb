import type { Engine } from '../core/engine.js';

/**
 * A profile (SPEC §9): a named preset a conversation starts with (`POST /chat/:profile`) and keeps.
 * The CLI reads them from `serve --profiles FILE` and builds each profile's engine; the server only
 * applies them.
 */
export interface Profile {
  readonly slug: string;
  readonly description?: string;
  readonly system_prompt?: string;
  /** Allow-list of tool names. Default: every tool the server has. */
  readonly tools?: readonly string[];
  /** This profile's engine (built by the CLI from the file's `engine` and `model`). Default: the server's. */
  readonly engine?: Engine;
  readonly max_iterations?: number;
  /** Which `/chat` overrides a run may set: true (default, all), false (none), or the override names allowed. */
  readonly allow_overrides?: boolean | readonly string[];
}
