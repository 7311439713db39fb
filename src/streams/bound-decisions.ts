import { argsDigest } from '../core/args-digest.js';
import type { PauseDecision } from '../core/pauses.js';
import { deniedBy, type PauseResolution } from './step-commands.js';

/**
 * A resolution with its decision bound to what will run (docs/protocol.md, Approvals bound to what runs): at
 * `after_inference`, `args_digests` holds the digest of each call that is not denied, over its arguments after
 * edits. The executor recomputes it just before the call runs. A cancelled run and an aborted one run nothing,
 * and `after_tools` has no calls to run: those are left as they are.
 */
export function bindResolution(resolution: PauseResolution): PauseResolution {
  const { pause, decision, reason } = resolution;
  if (pause.phase !== 'after_inference' || reason === 'cancelled' || decision.action === 'abort') return resolution;
  return { ...resolution, decision: bindDecision(decision, pause.tool_calls) };
}

/** `decision` with `args_digests` for `calls` (id and the model's `input`) that it lets run. */
export function bindDecision(decision: PauseDecision, calls: readonly { readonly id: string; readonly input: unknown }[]): PauseDecision {
  if (decision.action === 'abort') return decision;
  const digests: Record<string, string> = {};
  for (const call of calls) {
    if (deniedBy(decision, call.id) !== undefined) continue;
    const args = decision.action === 'edit' && Object.hasOwn(decision.edits, call.id) ? decision.edits[call.id] : call.input;
    digests[call.id] = argsDigest(args);
  }
  return { ...decision, args_digests: digests };
}
