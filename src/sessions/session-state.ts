import type { Engine, Usage } from '../core/engine.js';
import type { ForkOrigin, RunCheckpoint } from '../core/store.js';
import type { Turn } from '../core/turns.js';
import { createLoopState, type LoopPorts, type LoopState, type RunContext, type RunTools } from '../operators/loop-state.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { HibernatedRun, NO_CHOICES, resolveChoices, type ActiveRun, type ResolvedChoices } from './active-run.js';
import { createRunContext, overridesOf, type RunIds } from './run-context.js';
import { RunInProgressError, SessionClosedError, SessionStartedError } from './session-errors.js';
import type { RunOverrides, SessionChoices, SessionIdentity, SessionSettings } from './session.js';

const NO_TURNS: readonly Turn[] = Object.freeze([]);

/**
 * What a session is besides its run: its identity, finished turns and choices, and how a run's
 * context is made from them. A class rather than a closure record: a server holds one per
 * conversation, and prototype methods cost nothing per instance where closures and their context did.
 */
export abstract class SessionState {
  readonly conv_id: string;
  readonly session_id: string;
  readonly created_at: number;
  // Declared, not defined: only sessions that have them carry them; the others (thousands) pay no slot.
  declare readonly owner?: string;
  declare readonly forked_from?: ForkOrigin;
  declare profile?: string;
  // The shared empty list until a turn ends: many sessions a server holds never finished one (a paused first run).
  protected finished: readonly Turn[] = NO_TURNS;
  protected active: ActiveRun | HibernatedRun | undefined;
  protected chosen: ResolvedChoices = NO_CHOICES;
  protected closed = false;

  constructor(
    identity: SessionIdentity,
    protected readonly settings: SessionSettings,
  ) {
    this.conv_id = identity.conv_id;
    this.session_id = identity.session_id;
    this.created_at = identity.created_at;
    if (identity.owner !== undefined) this.owner = identity.owner;
    if (identity.forked_from !== undefined) this.forked_from = identity.forked_from;
  }

  /** The runtime's, through its settings: a field of its own would cost every session a slot. */
  protected get ports(): LoopPorts {
    return this.settings.ports;
  }

  get running(): boolean {
    return this.active !== undefined;
  }

  turns(): Turn[] {
    const { active, finished } = this;
    if (!active) return [...finished];
    const blocks = active instanceof HibernatedRun ? active.read(this.settings.storedCheckpoint).blocks : active.blocks;
    return [...finished, { id: active.turn_id, blocks }];
  }

  configure({ engine, tools, profile, defaults }: SessionChoices): void {
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active || this.finished.length > 0) throw new SessionStartedError(this.conv_id);
    this.chosen = resolveChoices(this.settings, { engine, tools, defaults });
    // Assigned once it has been, never deleted: `delete` would turn the object into a slow, larger dictionary.
    if (profile !== undefined || this.profile !== undefined) this.profile = profile;
  }

  registry(): ToolRegistry {
    return this.chosen.tools?.registry ?? this.ports.registry;
  }

  restoreTurns(turns: readonly Turn[]): void {
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    this.finished = turns.length === 0 ? NO_TURNS : [...turns];
  }

  /** A run's turn ended: it joins the finished ones (never written into the shared empty list). */
  protected finish(turn: Turn): void {
    if (this.finished === NO_TURNS) this.finished = [turn];
    else (this.finished as Turn[]).push(turn);
  }

  /** A checkpoint's state, with the session's engine and tools, adjusted by `prepare`. */
  protected restored(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): LoopState {
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    return this.stateOf(checkpoint, prepare);
  }

  /** A checkpoint's loop state, built as recovery builds it (docs/protocol.md, Durability). */
  protected stateOf(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, own: Pick<RunContext, 'engine' | 'tools'> = this.chosen): LoopState {
    const run = this.runContext(checkpoint, overridesOf(checkpoint), own.engine, own.tools, checkpoint.usage);
    const state = createLoopState(run, checkpoint.blocks, { next: checkpoint.next, iteration: checkpoint.iteration, decision: checkpoint.decision });
    return prepare(state);
  }

  protected runContext(ids: RunIds, overrides: RunOverrides, engine?: Engine, tools?: RunTools, used?: Usage): RunContext {
    const origin = { conv_id: this.conv_id, session_id: this.session_id, finished: this.finished, systemPrompt: this.settings.systemPrompt };
    return createRunContext(origin, ids, overrides, engine, tools, used);
  }
}
