import type { HeldSession } from './session.js';

/**
 * The sessions a runtime holds, by conversation and by session id: made first, so every part built
 * before the registry (the controller's step mode store, hibernation, grants) reads it directly; the
 * registry is the one that fills it.
 */
export interface SessionIndex {
  readonly byConv: Map<string, HeldSession>;
  // By session id, for step mode changes: a scan of every session made enabling step mode on many sessions quadratic.
  readonly convBySession: Map<string, string>;
}

export const createSessionIndex = (): SessionIndex => ({ byConv: new Map(), convBySession: new Map() });
