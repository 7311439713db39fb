import { Observable, of, Subscription } from 'rxjs';
import type { ToolCall } from '../core/turns.js';
import { bindDecision } from '../streams/step-commands.js';
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
 * Unsubscribing while the grants are read (cancellation) drops the state, as a pause would; a store that fails
 * answers "none covered" (see `GrantPort.covering`), so the run pauses.
 */
export function grantedOr(ports: GrantPorts, registry: ToolRegistry, state: LoopState, calls: readonly ToolCall[], pause$: () => Observable<LoopState>): Observable<LoopState> {
  // A tool that is not grantable always asks: no need to read the grants.
  if (calls.some((call) => registry.get(call.name)?.grantable === false)) return pause$();
  const covering$ = ports.grants.covering(state.run.conv_id, calls.map((call) => call.name));
  const decide = (grantIds: readonly (string | undefined)[]): Observable<LoopState> =>
    grantIds.every((id) => id !== undefined) ? of(granted(ports, state, calls, grantIds as readonly string[])) : pause$();
  // Hand-written rather than `covering$.pipe(concatMap(decide))`: when the store answers at once (memory, SQLite) the
  // pause is subscribed with the run's own subscriber and nothing else is held, so a paused run costs what it did
  // without grants, where the concatMap's layer took the heap of every paused run past its target.
  return new Observable<LoopState>((subscriber) => {
    let inner: Subscription | undefined;
    const start = (grantIds: readonly (string | undefined)[]): void => {
      inner = decide(grantIds).subscribe(subscriber);
    };
    const probe = covering$.subscribe({
      next: start,
      error: (error: unknown) => subscriber.error(error),
      // No answer at all: nothing is known to be covered, so ask.
      complete: () => inner ?? start(calls.map(() => undefined)),
    });
    if (probe.closed && inner) return inner;
    return () => {
      probe.unsubscribe();
      inner?.unsubscribe();
    };
  });
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
