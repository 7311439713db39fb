import type { Observable, OperatorFunction } from 'rxjs';
import type { Engine } from '../core/engine.js';
import type { Turn } from '../core/turns.js';
import type { ForkOrigin, RunCheckpoint } from '../core/store.js';
import type { LoopPorts, LoopState, RunTools } from '../operators/loop-state.js';
import type { Tool, ToolDefinition } from '../tools/define-tool.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { HeldPause } from '../streams/controller-settings.js';
import type { RunHandle, RunViews } from './run-handle.js';
import type { RunResult } from './run.js';
import type { RunSubscriptions } from './run-subscriptions.js';

export type { RunHandle, RunResult } from './run-handle.js';
export { RunInProgressError, SessionClosedError, SessionStartedError, UnknownToolsError } from './session-errors.js';

/** Tools as `createStepwise` takes them: built with `defineTool`, or plain definitions. */
export type ToolList = readonly (Tool | ToolDefinition)[];

/** Per-run choices (the `/chat` overrides). */
export interface RunOverrides {
  /** Allow-list of tool names for this run; unknown names are refused by `start`. */
  readonly tools?: readonly string[];
  readonly system_prompt?: string;
  readonly max_iterations?: number;
}

export interface StartRunInput {
  readonly prompt: string;
  /** Field by field over the session's `defaults`. */
  readonly overrides?: RunOverrides;
  /** This run's engine instead of the session's (wrapped by the runtime's middlewares). */
  readonly engine?: Engine;
  /** This run's tools instead of the session's. */
  readonly tools?: ToolList;
}

/** What a session may choose for itself instead of the runtime's: `sessions.open` and `configure`. */
export interface SessionChoices {
  /** The session's engine (wrapped by the runtime's middlewares). Default: the runtime's. */
  readonly engine?: Engine;
  /** The session's own tools (run with the runtime's executor settings). Default: the runtime's. */
  readonly tools?: ToolList;
  /** The name of the preset these choices came from (a server profile's slug); shown, never interpreted. */
  readonly profile?: string;
  /** Overrides applied to every run of the session unless the run sets its own. Default none. */
  readonly defaults?: RunOverrides;
}

export interface SessionIdentity {
  readonly conv_id: string;
  readonly session_id: string;
  readonly created_at: number;
  /** The user who created it, when auth is on. */
  readonly owner?: string;
  /** Where it was forked from (docs/protocol.md, Forks), when it is a fork. */
  readonly forked_from?: ForkOrigin;
}

/** A conversation's one session, as a user drives it: its turns, its single active run, cancel. */
export interface Session extends SessionIdentity {
  readonly running: boolean;
  /** The profile the session was opened with (see {@link SessionChoices}). */
  readonly profile?: string;
  /** Finished turns, then the running turn as it stands. */
  turns(): Turn[];
  start(input: StartRunInput): RunHandle;
  /**
   * Sets the session's choices before its first run, e.g. a conversation joined over the WebSocket
   * and then started with a profile. Throws {@link SessionStartedError} once it has run.
   */
  configure(choices: SessionChoices): void;
  /** Cancels the active run; false when none was running. */
  cancel(): boolean;
  /** Cancels the active run; the session starts no run after it ({@link SessionClosedError}). */
  dispose(): void;
  /** The tools the session's runs call: its own (see {@link SessionChoices}), else the runtime's. */
  registry(): ToolRegistry;
}

/**
 * A session as its runtime holds it: what recovery, hibernation and a service's instances do with its
 * run besides what a user does (docs/protocol.md, Durability).
 */
export interface HeldSession extends Session {
  /**
   * Re-enters the loop at a stored checkpoint, with the session's engine and tools. `prepare` adjusts
   * the rebuilt state before it runs (interrupted tool calls). No `run-started`.
   */
  resume(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): RunHandle;
  /**
   * A run restored at a pause, held as that pause alone until it resolves. `wait` is the pause, from the
   * rebuilt state, and emits the state its resolution leads to: the run's loop is built only then.
   * Cancelled first, the run ends where it stands, as a paused run does (the pause resolves `cancelled`).
   */
  restoreAtPause(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, wait: (state: LoopState) => Observable<LoopState>): void;
  /**
   * The finished turns of the conversation as a store has them: before any run, or on an idle session
   * another instance of the service has run since (docs/protocol.md, Several instances).
   */
  restoreTurns(turns: readonly Turn[]): void;
  /**
   * The run, paused at the pause `pause` holds (hibernated by the controller), leaves memory: its loop
   * is unsubscribed and the session keeps no more of it than its handle and what reads `checkpoint`
   * back. Cancelled, it ends where it stands; `wake` rebuilds it.
   */
  hibernate(checkpoint: RunCheckpoint, pause: HeldPause): void;
  /** A run restored at the stored pause `pause` holds (pending again in the controller) comes back hibernated there, with no loop built. */
  restoreHibernated(checkpoint: RunCheckpoint, pause: HeldPause): void;
  /**
   * The hibernated run's pause resolved: its loop is rebuilt from the checkpoint as recovery rebuilds
   * it, `resume` applies the resolution, and it goes on with the same handle. Nothing when the session
   * holds no hibernated run (cancelled or closed since).
   */
  wake(resume: (state: LoopState) => LoopState): void;
  /**
   * Stops the active run where it stands without ending it (SIGTERM with a durable store): no
   * `run-ended`, its checkpoint kept. The session starts no run after it. The caller mutes publishing first.
   */
  suspend(): void;
}

/** A run's checkpoint as the store has it, read at once (`Store.checkpointNow`); undefined when it has none. */
export type StoredCheckpoint = (ids: Pick<RunCheckpoint, 'conv_id' | 'session_id' | 'inference_id' | 'turn_id'>) => RunCheckpoint | undefined;

export interface SessionSettings {
  /** The ports every run goes through. */
  readonly ports: LoopPorts;
  /** The runtime's tool loop: built once, shared by every run of every session. */
  readonly loop: OperatorFunction<LoopState, LoopState>;
  readonly systemPrompt?: string;
  /** Where run handles read their events and pauses. */
  readonly views: RunViews;
  /** A registry and executor for a session's (or run's) own tools, with the runtime's executor settings. */
  readonly toolsFor: (tools: ToolList) => RunTools;
  /** A session's (or run's) own engine, wrapped by the runtime's middlewares. */
  readonly engineFor: (engine: Engine) => Engine;
  /**
   * Told when a run starts and when it ends (retention watches idle sessions). `restored`: a run brought
   * back from the store as it was (a restart, a takeover), which changed nothing the store keeps.
   */
  readonly onActivity?: (session: Session, restored?: boolean) => void;
  /** Told each finished run's result, its turn final (the store keeps it). */
  readonly onRunEnded?: (session: Session, result: RunResult) => void;
  /** Who subscribes each run and holds its subscription: the session registry. */
  readonly runs: RunSubscriptions;
  /** A run's checkpoint read from the store at once, when it can: a hibernated run then keeps none in memory. */
  readonly storedCheckpoint?: StoredCheckpoint;
}
