import { Subject, Subscription, type Observable } from 'rxjs';
import type { RunCheckpoint } from '../core/store.js';
import type { Block } from '../core/turns.js';
import { StoreClosedError } from '../core/store-errors.js';
import { createLoopState, type LoopState } from '../operators/loop-state.js';
import type { HeldPause } from '../streams/controller-settings.js';
import { HibernatedRun, type ActiveRun } from './active-run.js';
import { cancelledAt, createRun$, type RunResult } from './run.js';
import { mergeOverrides } from './run-context.js';
import { LoopRunHandle, type RunHandle } from './run-handle.js';
import { RunInProgressError, SessionClosedError, UnknownToolsError } from './session-errors.js';
import { SessionState } from './session-state.js';
import type { HeldSession, SessionChoices, SessionIdentity, SessionSettings, StartRunInput } from './session.js';
import { endUnrestored } from './unrestored.js';

/**
 * A session and its one run: started, resumed from a checkpoint, held at a restored pause, hibernated
 * and woken, cancelled. What it is besides (identity, turns, choices) is its base's (./session-state.ts).
 * The subscription of its run is the session registry's (`settings.runs`), which owns the session.
 */
export class LoopSession extends SessionState implements HeldSession {
  start(input: StartRunInput): RunHandle {
    const { ports, settings, chosen } = this;
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    const overrides = mergeOverrides(chosen.defaults, input.overrides ?? {});
    const engine = input.engine ? settings.engineFor(input.engine) : chosen.engine;
    const tools = input.tools ? settings.toolsFor(input.tools) : chosen.tools;
    const unknown = overrides.tools ? (tools?.registry ?? ports.registry).unknown(overrides.tools) : [];
    if (unknown.length > 0) throw new UnknownToolsError(unknown);
    const userBlock: Block = { id: ports.ids.next('block'), kind: 'user', role: 'user', payload: { text: input.prompt } };
    const run = this.runContext({ inference_id: ports.ids.next('inf'), turn_id: ports.ids.next('turn') }, overrides, engine, tools);
    return this.launch(createLoopState(run, [userBlock]), false);
  }

  resume(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): RunHandle {
    return this.launch(this.restored(checkpoint, prepare), true);
  }

  restoreAtPause(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, wait: (state: LoopState) => Observable<LoopState>): void {
    const { ports, settings, conv_id } = this;
    const state = this.restored(checkpoint, prepare);
    const cancel$ = new Subject<void>();
    const waiting: ActiveRun = { turn_id: state.run.turn_id, cancel$, blocks: state.blocks };
    const held = new Subscription();
    settings.runs.hold(conv_id, held);
    this.active = waiting;
    settings.onActivity?.(this, true);
    held.add(
      cancel$.subscribe(() => {
        // The pause's teardown resolves it as `cancelled`, then the run ends as a cancelled loop does.
        settings.runs.drop(conv_id);
        const result = cancelledAt(ports, state);
        this.finish(result.turn);
        settings.onRunEnded?.(this, result);
        this.active = undefined;
        settings.onActivity?.(this);
      }),
    );
    held.add(
      wait(state).subscribe((resolved) => {
        if (this.active !== waiting) return;
        settings.runs.drop(conv_id);
        this.launch(resolved, true);
      }),
    );
  }

  hibernate(checkpoint: RunCheckpoint, pause: HeldPause): void {
    const { active } = this;
    if (!active) return void pause.unsubscribe();
    // The loop goes, its pause (hibernated by the controller first) stays pending: `pause` resolves it.
    this.settings.runs.drop(this.conv_id);
    this.active = new HibernatedRun(checkpoint, pause, active, this.settings.storedCheckpoint);
  }

  restoreHibernated(checkpoint: RunCheckpoint, pause: HeldPause): void {
    if (this.closed || this.active) return void pause.unsubscribe();
    this.active = new HibernatedRun(checkpoint, pause, {}, this.settings.storedCheckpoint);
    this.settings.onActivity?.(this, true);
  }

  /** As a run restored at a pause is cancelled: its pause resolves `cancelled`, then the run ends where it stood (unless its store closed). */
  private endHibernated(hibernated: HibernatedRun): void {
    hibernated.pause.unsubscribe();
    this.active = undefined;
    const state = this.rebuild(hibernated, (rebuilt) => rebuilt);
    if (state) this.ended(cancelledAt(this.ports, state), hibernated.handle);
  }

  wake(resume: (state: LoopState) => LoopState): void {
    const hibernated = this.active;
    // Cancelled, suspended or closed since its pause resolved: nothing to rebuild.
    if (!(hibernated instanceof HibernatedRun)) return;
    // Its pause has resolved.
    this.active = undefined;
    const state = this.rebuild(hibernated, resume);
    if (state) this.launch(state, true, hibernated.handle);
  }

  /**
   * A hibernated run's state, rebuilt from its checkpoint as recovery rebuilds it and adjusted by
   * `resume`; undefined when it cannot be. A store that cannot say the checkpoint (closed under its
   * runtime) keeps the run for the next start; a checkpoint or history that cannot be read back, or a
   * rebuild that throws, ends the run `failed` here (docs/protocol.md, Durability): this runs in a
   * resolution's hand back, where a throw would end the process.
   */
  private rebuild(hibernated: HibernatedRun, resume: (state: LoopState) => LoopState): LoopState | undefined {
    let checkpoint: RunCheckpoint | undefined;
    try {
      checkpoint = hibernated.read(this.settings.storedCheckpoint);
      return resume(this.stateOf(checkpoint, (state) => state, hibernated.own));
    } catch (error) {
      if (error instanceof StoreClosedError) return undefined;
      const { conv_id, session_id, inference_id, turn_id } = hibernated.pause.info;
      this.ended(endUnrestored(this.ports, { conv_id, session_id, inference_id, turn_id }, error, () => checkpoint?.blocks), hibernated.handle);
      return undefined;
    }
  }

  /** A run ended without its loop (a hibernated one cancelled or that could not be rebuilt): its turn and result kept. */
  private ended(result: RunResult, handle: LoopRunHandle | undefined): void {
    this.finish(result.turn);
    this.settings.onRunEnded?.(this, result);
    handle?.settle(result);
    this.settings.onActivity?.(this);
  }

  cancel(): boolean {
    const { active } = this;
    if (!active) return false;
    if (active instanceof HibernatedRun) this.endHibernated(active);
    else active.cancel$.next();
    return true;
  }

  suspend(): void {
    this.closed = true;
    // Unsubscribed, not cancelled: the run stops where it stands and its checkpoint stays for the next start.
    const { active } = this;
    if (active instanceof HibernatedRun) active.pause.unsubscribe();
    else if (active) this.settings.runs.drop(this.conv_id);
    this.active = undefined;
  }

  dispose(): void {
    this.closed = true;
    this.cancel();
    if (this.active) this.settings.runs.drop(this.conv_id);
    this.active = undefined;
    this.chosen.engine?.forget?.(this.conv_id);
  }

  /** Runs the loop from `initial` as the session's one active run, subscribed by the session registry. */
  private launch(initial: LoopState, resumed: boolean, woken?: LoopRunHandle): RunHandle {
    const { ports, settings, conv_id } = this;
    const { inference_id, turn_id } = initial.run;
    const cancel$ = new Subject<void>();
    const handle = woken ?? new LoopRunHandle(inference_id, turn_id, conv_id, settings.views.hub.lastSeq(conv_id), settings.views);
    const { engine, tools } = initial.run;
    // Only a run with an engine or tools of its own keeps them: the session's are found again from it.
    const own = engine === this.chosen.engine && tools === this.chosen.tools ? undefined : { ...(engine ? { engine } : {}), ...(tools ? { tools } : {}) };
    const current: ActiveRun = { turn_id, cancel$, blocks: initial.blocks, handle, ...(own ? { own } : {}) };
    this.active = current;
    settings.onActivity?.(this);
    const release = (): void => {
      if (this.active !== current) return;
      this.active = undefined;
      settings.runs.release(conv_id);
      settings.onActivity?.(this);
    };
    const run$ = createRun$(ports, settings.loop, initial, cancel$, (blocks) => {
      current.blocks = blocks;
    }, resumed);
    settings.runs.subscribe(conv_id, run$, {
      next: (result) => {
        this.finish(result.turn);
        settings.onRunEnded?.(this, result);
        release();
        handle.settle(result);
      },
      // Only a programmer bug reaches here; free the session so it is not wedged.
      error: (error: unknown) => {
        release();
        handle.fail(error);
      },
    });
    return handle;
  }
}

/** A new session of the runtime, with its first choices. */
export function createSession(identity: SessionIdentity, settings: SessionSettings, choices: SessionChoices = {}): HeldSession {
  const session = new LoopSession(identity, settings);
  session.configure(choices);
  return session;
}
