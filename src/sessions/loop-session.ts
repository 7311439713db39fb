import { Subject, Subscription, type Observable } from 'rxjs';
import type { Engine } from '../core/engine.js';
import type { Block, Turn } from '../core/turns.js';
import type { ForkOrigin, RunCheckpoint } from '../core/store.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { createLoopState, type LoopPorts, type LoopState, type RunContext, type RunTools } from '../operators/loop-state.js';
import { StoreClosedError } from '../core/store-errors.js';
import { cancelledAt, createRun$, type RunResult } from './run.js';
import { createRunContext, mergeOverrides, overridesOf, type RunIds } from './run-context.js';
import type { HeldPause } from '../streams/dormant-pauses.js';
import { NO_CHOICES, resolveChoices, SleepingRun, type ActiveRun, type ResolvedChoices } from './active-run.js';
import { LoopRunHandle, type RunHandle } from './run-handle.js';
import { endUnrestored } from './unrestored.js';
import { RunInProgressError, SessionClosedError, SessionStartedError, UnknownToolsError } from './session-errors.js';
import type { RunOverrides, Session, SessionChoices, SessionIdentity, SessionSettings, StartRunInput } from './session.js';

const NO_TURNS: readonly Turn[] = Object.freeze([]);

/**
 * A class rather than a closure record: a server holds one per conversation, and prototype methods
 * cost nothing per instance where five closures and their context did. The subscription of its run
 * is the session registry's (`settings.runs`), which owns the session.
 */
export class LoopSession implements Session {
  readonly conv_id: string;
  readonly session_id: string;
  readonly created_at: number;
  // Declared, not defined: only sessions that have them carry them; the others (thousands) pay no slot.
  declare readonly owner?: string;
  declare readonly forked_from?: ForkOrigin;
  declare profile?: string;
  // The shared empty list until a turn ends: many sessions a server holds never finished one (a paused first run).
  private finished: readonly Turn[] = NO_TURNS;
  private active: ActiveRun | SleepingRun | undefined;
  private chosen: ResolvedChoices = NO_CHOICES;
  private closed = false;

  constructor(
    identity: SessionIdentity,
    private readonly settings: SessionSettings,
  ) {
    this.conv_id = identity.conv_id;
    this.session_id = identity.session_id;
    this.created_at = identity.created_at;
    if (identity.owner !== undefined) this.owner = identity.owner;
    if (identity.forked_from !== undefined) this.forked_from = identity.forked_from;
  }

  /** The runtime's, through its settings: a field of its own would cost every session a slot. */
  private get ports(): LoopPorts {
    return this.settings.ports;
  }

  get running(): boolean {
    return this.active !== undefined;
  }

  turns(): Turn[] {
    const { active, finished } = this;
    if (!active) return [...finished];
    const blocks = active instanceof SleepingRun ? active.read(this.settings.storedCheckpoint).blocks : active.blocks;
    return [...finished, { id: active.turn_id, blocks }];
  }

  configure({ engine, tools, profile, defaults }: SessionChoices): void {
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active || this.finished.length > 0) throw new SessionStartedError(this.conv_id);
    this.chosen = resolveChoices(this.settings, { engine, tools, defaults });
    // Assigned once it has been, never deleted: `delete` would turn the object into a slow, larger dictionary.
    if (profile !== undefined || this.profile !== undefined) this.profile = profile;
  }

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

  park(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, wait: (state: LoopState) => Observable<LoopState>): void {
    const { ports, settings, conv_id } = this;
    const state = this.restored(checkpoint, prepare);
    const cancel$ = new Subject<void>();
    const parked: ActiveRun = { turn_id: state.run.turn_id, cancel$, blocks: state.blocks };
    const held = new Subscription();
    settings.runs.hold(conv_id, held);
    this.active = parked;
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
        if (this.active !== parked) return;
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
    this.active = new SleepingRun(checkpoint, pause, active, this.settings.storedCheckpoint);
  }

  sleep(checkpoint: RunCheckpoint, pause: HeldPause): void {
    if (this.closed || this.active) return void pause.unsubscribe();
    this.active = new SleepingRun(checkpoint, pause, {}, this.settings.storedCheckpoint);
    this.settings.onActivity?.(this, true);
  }

  /** A run's turn ended: it joins the finished ones (never written into the shared empty list). */
  private finish(turn: Turn): void {
    if (this.finished === NO_TURNS) this.finished = [turn];
    else (this.finished as Turn[]).push(turn);
  }

  registry(): ToolRegistry {
    return this.chosen.tools?.registry ?? this.ports.registry;
  }

  /** As a parked run is cancelled: its pause resolves `cancelled`, then the run ends where it stood (unless its store closed). */
  private endHibernated(sleeping: SleepingRun): void {
    sleeping.pause.unsubscribe();
    this.active = undefined;
    const state = this.rebuild(sleeping, (rebuilt) => rebuilt);
    if (state) this.ended(cancelledAt(this.ports, state), sleeping.handle);
  }

  wake(resume: (state: LoopState) => LoopState): void {
    const hibernated = this.active;
    // Cancelled, suspended or closed since its pause resolved: nothing to rebuild.
    if (!(hibernated instanceof SleepingRun)) return;
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
  private rebuild(sleeping: SleepingRun, resume: (state: LoopState) => LoopState): LoopState | undefined {
    let checkpoint: RunCheckpoint | undefined;
    try {
      checkpoint = sleeping.read(this.settings.storedCheckpoint);
      return resume(this.stateOf(checkpoint, (state) => state, sleeping.own));
    } catch (error) {
      if (error instanceof StoreClosedError) return undefined;
      const { conv_id, session_id, inference_id, turn_id } = sleeping.pause.info;
      this.ended(endUnrestored(this.ports, { conv_id, session_id, inference_id, turn_id }, error, () => checkpoint?.blocks), sleeping.handle);
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

  restoreTurns(turns: readonly Turn[]): void {
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    this.finished = turns.length === 0 ? NO_TURNS : [...turns];
  }

  cancel(): boolean {
    const { active } = this;
    if (!active) return false;
    if (active instanceof SleepingRun) this.endHibernated(active);
    else active.cancel$.next();
    return true;
  }

  suspend(): void {
    this.closed = true;
    // Unsubscribed, not cancelled: the run stops where it stands and its checkpoint stays for the next start.
    const { active } = this;
    if (active instanceof SleepingRun) active.pause.unsubscribe();
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

  /** A checkpoint's state, with the session's engine and tools, adjusted by `prepare`. */
  private restored(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): LoopState {
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    return this.stateOf(checkpoint, prepare);
  }

  /** A checkpoint's loop state, built as recovery builds it (docs/protocol.md, Durability). */
  private stateOf(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, own: Pick<RunContext, 'engine' | 'tools'> = this.chosen): LoopState {
    const run = this.runContext(checkpoint, overridesOf(checkpoint), own.engine, own.tools);
    const state = createLoopState(run, checkpoint.blocks, { next: checkpoint.next, iteration: checkpoint.iteration, decision: checkpoint.decision });
    return prepare(state);
  }

  private runContext(ids: RunIds, overrides: RunOverrides, engine?: Engine, tools?: RunTools): RunContext {
    const origin = { conv_id: this.conv_id, session_id: this.session_id, finished: this.finished, systemPrompt: this.settings.systemPrompt };
    return createRunContext(origin, ids, overrides, engine, tools);
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
