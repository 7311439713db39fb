import { createHash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';

/**
 * The digest that binds a decision to the arguments it approved (docs/protocol.md, Approvals bound to what runs):
 * SHA-256, lowercase hex, of the RFC 8785 canonical JSON of the arguments. Canonical JSON makes the digest a
 * function of the value alone, not of key order or number spelling, so the store, a restart or another instance
 * recompute the same one. `undefined` (no arguments at all) is digested as `null`, what JSON makes of it.
 */
export function argsDigest(args: unknown): string {
  return createHash('sha256')
    .update(canonicalize(args === undefined ? null : args), 'utf8')
    .digest('hex');
}

/** The tool error of a call whose arguments no longer match what was approved; nothing of the tool runs. */
export const ARGS_CHANGED = 'arguments changed after approval';
