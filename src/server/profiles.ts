import type { Engine } from '../core/engine.js';
import type { SessionChoices } from '../sessions/session.js';

/**
 * A profile (docs/protocol.md, Profiles file): a named preset a conversation starts with (`POST /chat/:profile`) and keeps.
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

/** The `/chat` overrides a profile can allow or forbid (`step_mode` is the operator's, never forbidden). */
export const PROFILE_OVERRIDES = Object.freeze(['tools', 'system_prompt', 'max_iterations'] as const);
export type ProfileOverride = (typeof PROFILE_OVERRIDES)[number];

/** Names a profile's `allow_overrides` list may hold: `step_mode` too, though it is never forbidden (it is the operator's control). */
const ALLOWABLE_NAMES: readonly string[] = Object.freeze([...PROFILE_OVERRIDES, 'step_mode']);

/** A slug is a path segment of `POST /chat/:profile`; `cancel` is taken by `POST /chat/cancel`. */
const SLUG = /^[A-Za-z0-9_-]{1,64}$/;

/** The server's profiles by slug. */
export type ProfileTable = ReadonlyMap<string, Profile>;

/**
 * Checks the profiles against the server's tools and indexes them by slug. Fails, naming the
 * profile, on a bad or duplicate slug, an unknown tool or a bad `allow_overrides`, so a wrong
 * profiles file stops the server at start and not at a user's first chat.
 */
export function createProfileTable(profiles: readonly Profile[], toolNames: readonly string[]): ProfileTable {
  const table = new Map<string, Profile>();
  const known = new Set(toolNames);
  for (const profile of profiles) {
    const { slug } = profile;
    if (typeof slug !== 'string' || !SLUG.test(slug) || slug === 'cancel') {
      throw new TypeError(`profiles: slug must match ${SLUG} and not be "cancel" (got ${JSON.stringify(slug)})`);
    }
    if (table.has(slug)) throw new TypeError(`profiles: two profiles are named "${slug}"`);
    const unknown = (profile.tools ?? []).filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new TypeError(`profiles: "${slug}" names unknown tools: ${unknown.join(', ')} (known: ${toolNames.join(', ') || 'none'})`);
    }
    if (profile.max_iterations !== undefined && !(Number.isInteger(profile.max_iterations) && profile.max_iterations >= 1)) {
      throw new TypeError(`profiles: "${slug}".max_iterations must be a positive integer (got ${String(profile.max_iterations)})`);
    }
    const allow = profile.allow_overrides;
    const badAllow = Array.isArray(allow) ? allow.filter((name) => !ALLOWABLE_NAMES.includes(name)) : [];
    if ((allow !== undefined && typeof allow !== 'boolean' && !Array.isArray(allow)) || badAllow.length > 0) {
      throw new TypeError(`profiles: "${slug}".allow_overrides must be true, false or a list of ${ALLOWABLE_NAMES.join(', ')}`);
    }
    table.set(slug, profile);
  }
  return table;
}

/** The overrides in `requested` that `profile` does not allow (none without a profile). */
export function forbiddenOverrides(profile: Profile | undefined, requested: readonly ProfileOverride[]): ProfileOverride[] {
  const allow = profile?.allow_overrides ?? true;
  if (allow === true) return [];
  if (allow === false) return [...requested];
  return requested.filter((name) => !allow.includes(name));
}

/** Tools in `requested` outside the profile's own allow-list: a run may narrow it, never widen it. */
export function toolsOutside(profile: Profile | undefined, requested: readonly string[]): string[] {
  const offered = profile?.tools;
  return offered ? requested.filter((name) => !offered.includes(name)) : [];
}

/** What a conversation started with the profile is opened with. */
export function profileChoices(profile: Profile): SessionChoices {
  const { slug, engine, system_prompt, tools, max_iterations } = profile;
  return {
    profile: slug,
    ...(engine ? { engine } : {}),
    defaults: {
      ...(system_prompt !== undefined ? { system_prompt } : {}),
      ...(tools ? { tools } : {}),
      ...(max_iterations !== undefined ? { max_iterations } : {}),
    },
  };
}

/** A profile as `GET /profiles` lists it: its tools are every server tool when it names none. */
export function describeProfile(profile: Profile, toolNames: readonly string[]): { slug: string; description: string; tools: readonly string[] } {
  return { slug: profile.slug, description: profile.description ?? '', tools: profile.tools ?? toolNames };
}
