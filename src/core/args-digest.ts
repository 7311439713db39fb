import { createHash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';
import { toJsonValue } from './json.js';

/**
 * The digest that binds a decision to the arguments it approved (docs/protocol.md, Approvals bound to what runs):
 * SHA-256, lowercase hex, of the RFC 8785 canonical JSON of the arguments. Canonical JSON makes the digest a
 * function of the value alone, not of key order or number spelling, so the store, a restart or another instance
 * recompute the same one. `undefined` (no arguments at all) is digested as `null`, what JSON makes of it.
 */
export function argsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalText(args === undefined ? null : args), 'utf8').digest('hex');
}

/**
 * Total: a digest is taken inside timers and pause resolutions, where a throw ends the process. What
 * JSON cannot say (a BigInt, a cycle, from a library's own engine) is digested as the JSON it is
 * stored as; arguments past the entry's depth bound never reach here, and if they did they would
 * digest as the error that refused them rather than throw.
 */
function canonicalText(value: unknown): string {
  try {
    return canonicalize(value);
  } catch {
    try {
      return canonicalize(toJsonValue(value));
    } catch (error) {
      return `not digestible: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

/** The tool error of a call whose arguments no longer match what was approved; nothing of the tool runs. */
export const ARGS_CHANGED = 'arguments changed after approval';
