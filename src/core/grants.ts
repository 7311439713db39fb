import type { Observable } from 'rxjs';

/**
 * Remembered approvals (docs/protocol.md, Grants): a continue or edit may say "and from now on, these tools without
 * asking" within a scope. The vocabulary is defined once here; the store keeps grants, the loop consults them.
 */

/** Where a grant applies: the conversation it was made in, every conversation of its profile, or the whole server. */
export type GrantScope = 'conversation' | 'profile' | 'server';

export const GRANT_SCOPES: readonly GrantScope[] = Object.freeze(['conversation', 'profile', 'server']);

/** What a continue or edit asks to remember. */
export interface Remember {
  readonly scope: GrantScope;
  /** Tool names; a call of one of them no longer pauses within the scope. */
  readonly tools: readonly string[];
  /** How long the grant lives, ms; absent: until revoked. */
  readonly ttl_ms?: number;
}

/** A grant as stored, and (without `owner`) as `GET /grants` lists it. */
export interface GrantRecord {
  readonly grant_id: string;
  readonly scope: GrantScope;
  readonly tools: readonly string[];
  /** Scope `conversation`: the conversation it was made in. */
  readonly conv_id?: string;
  /** Scope `profile`: the profile of the conversation it was made in. */
  readonly profile?: string;
  /** Epoch ms after which it no longer applies; absent: until revoked. */
  readonly expires_at?: number;
  /** Who made it: the token's user, `local` without auth. */
  readonly by: string;
  /** Epoch ms. */
  readonly created_at: number;
  /** The user whose conversations it covers (absent without auth): a grant never approves another user's calls. */
  readonly owner?: string;
}

/**
 * The grant part of the store port: durable with a durable store, and shared by every instance of a service, so a
 * grant made on one instance is honoured by all. Each call reads or writes the store itself (no cache): a revocation
 * on any instance applies from the next call anywhere.
 */
export interface GrantStore {
  /** Resolves once the grant is committed. */
  put(grant: GrantRecord): Promise<void>;
  /** Resolves true once the grant is gone, false when there was none with that id. */
  remove(grantId: string): Promise<boolean>;
  /**
   * Every stored grant, expired ones included (the reader knows the time), oldest first; emits once. An Observable
   * (the loop asks at each would-be pause): a store that can answer at once (memory, SQLite) does, so a run in
   * virtual time stays in virtual time.
   */
  list$(): Observable<readonly GrantRecord[]>;
}

/** Where the loop asks whether a call may run without a pause. */
export interface GrantPort {
  /**
   * For each tool name, in order, the id of a live grant covering a call of it in this conversation now, or
   * undefined. Emits once and completes; a store that cannot answer covers nothing (the run pauses, the safe side).
   */
  covering(convId: string, names: readonly string[]): Observable<readonly (string | undefined)[]>;
}
