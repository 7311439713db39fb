import { concatMap, of, type Observable } from 'rxjs';
import type { ToolCall } from '../core/turns.js';
import { bindDecision } from '../streams/bound-decisions.js';
import { eventFrom } from '../streams/events.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { withDecision, type LoopPorts, type LoopState } from './loop-state.js';

/** What a would-be pause needs to let granted calls through. */
export type GrantPorts = Required<Pick<LoopPorts, 'grants'>> & Pick<LoopPorts, 'publish' | 'ids' | 'scheduler'>;

/**
 * An `after_inference` pause that grants may make unnecessary (docs/protocol.md, Grants): when every pending call is
 * of a grantable tool and covered by a live grant, the calls run at once, each announced as `granted` (the store
 * writes its audit row, `by: "grant"`), under a `continue` bound to their arguments; otherwise `pause$` pauses as
 * before, listing every call. The grants are read at each would-be pause, so a revocation applies from the next one.
 *
 * ```
 * state:    --s---------|
 * covering:   (g|)              (every call granted)
 * events:     G                 (granted, one per call)
 * output:   --s'--------|       (s' carries the bound continue)
 * ```
 *
 * Unsubscribing while the grants are read (cancellation) drops the state, as a pause would.
 */
export function grantedOr(ports: GrantPorts, registry: ToolRegistry, state: LoopState, calls: readonly ToolCall[], pause$: () => Observable<LoopState>): Observable<LoopState> {
  // A tool that is not grantable always asks: no need to read the grants.
  if (calls.some((call) => registry.get(call.name)?.grantable === false)) return pause$();
  return ports.grants.covering(state.run.conv_id, calls.map((call) => call.name)).pipe(
    // concatMap: `covering` emits once; the pause (when one is due) is subscribed only then.
    concatMap((grantIds) => (grantIds.every((id) => id !== undefined) ? of(granted(ports, state, calls, grantIds as readonly string[])) : pause$())),
  );
}

function granted(ports: GrantPorts, state: LoopState, calls: readonly ToolCall[], grantIds: readonly string[]): LoopState {
  const { run } = state;
  const decision = bindDecision({ action: 'continue' }, calls.map((call) => ({ id: call.id, input: call.args })));
  const digests = decision.action === 'continue' ? (decision.args_digests ?? {}) : {};
  calls.forEach((call, index) => {
    ports.publish(
      eventFrom('granted', run, ports.scheduler.now(), {
        grant_id: grantIds[index] ?? '',
        tool_call_id: call.id,
        name: call.name,
        // The audit row's id: no pause was made, so it has one of its own.
        decision_id: ports.ids.next('pause'),
        args_digest: digests[call.id] ?? '',
      }),
    );
  });
  return withDecision(state, decision);
}
