import { Subject, Subscription, type Observable, type OperatorFunction } from 'rxjs';
import type { Engine } from '../core/engine.js';
import type { Block, Turn } from '../core/turns.js';
import type { ForkOrigin, RunCheckpoint } from '../core/store.js';
import { createLoopState, type LoopPorts, type LoopState, type RunContext, type RunTools } from '../operators/loop-state.js';
import type { Tool, ToolDefinition } from '../tools/define-tool.js';
import { cancelledAt, createRun$, type RunResult } from './run.js';
import { LoopRunHandle, type RunHandle, type RunViews } from './run-handle.js';

export type { RunHandle, RunResult } from './run-handle.js';

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

export class RunInProgressError extends Error {
  override readonly name = 'RunInProgressError';
  readonly code = 'run_in_progress';
  constructor(
    readonly conv_id: string,
    readonly session_id: string,
  ) {
    super(`conversation ${conv_id} already has a run in progress`);
  }
}

export class SessionStartedError extends Error {
  override readonly name = 'SessionStartedError';
  readonly code = 'session_started';
  constructor(readonly conv_id: string) {
    super(`conversation ${conv_id} has already run: its engine, tools and profile are fixed`);
  }
}

export class SessionClosedError extends Error {
  override readonly name = 'SessionClosedError';
  readonly code = 'session_closed';
  constructor(readonly conv_id: string) {
    super(`conversation ${conv_id} was closed (sessions.close or retention): open it again to start a new session`);
  }
}

export class UnknownToolsError extends Error {
  override readonly name = 'UnknownToolsError';
  readonly code = 'unknown_tools';
  constructor(readonly tools: readonly string[]) {
    super(`unknown tool names: ${tools.join(', ')}`);
  }
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

/** A conversation's one session: its turns, its single active run, cancel. */
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
  /**
   * Recovery only: re-enters the loop at a stored checkpoint (docs/protocol.md, Durability), with the session's engine and
   * tools. `prepare` adjusts the rebuilt state before it runs (interrupted tool calls). No `run-started`.
   */
  resume(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): RunHandle;
  /**
   * Recovery only: a run restored at a pause, held as that pause alone until it resolves. `wait` is
   * the pause, from the rebuilt state, and emits the state its resolution leads to: the run's loop
   * is built only then, so a restart with 10 000 paused runs builds none (`restart_recover`).
   * Cancelled first, the run ends where it stands, as a paused run does (the pause resolves `cancelled`).
   */
  park(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, wait: (state: LoopState) => Observable<LoopState>): void;
  /**
   * Recovery and the cluster only: the finished turns of the conversation as a store has them. Before
   * any run, or on an idle session another instance of the service has run since (docs/protocol.md, Several instances).
   */
  restoreTurns(turns: readonly Turn[]): void;
  /**
   * Stops the active run where it stands without ending it (SIGTERM with a durable store): no
   * `run-ended`, its checkpoint kept. The session starts no run after it. The caller mutes publishing first.
   */
  suspend(): void;
}

export interface SessionSettings {
  /** The runtime's tool loop: built once, shared by every run of every session. */
  readonly loop: OperatorFunction<LoopState, LoopState>;
  readonly systemPrompt?: string;
  /** Where run handles read their events and pauses. */
  readonly views: RunViews;
  /** A registry and executor for a session's (or run's) own tools, with the runtime's executor settings. */
  readonly toolsFor: (tools: ToolList) => RunTools;
  /** A session's (or run's) own engine, wrapped by the runtime's middlewares. */
  readonly engineFor: (engine: Engine) => Engine;
  /** Told when a run starts and when it ends (retention watches idle sessions). */
  readonly onActivity?: (session: Session) => void;
  /** Told each finished run's result, its turn final (the store keeps it). */
  readonly onRunEnded?: (session: Session, result: RunResult) => void;
}

export function createSession(ports: LoopPorts, identity: SessionIdentity, settings: SessionSettings, choices: SessionChoices = {}): Session {
  const session = new LoopSession(ports, identity, settings);
  session.configure(choices);
  return session;
}

/** The session's choices, resolved once: its engine wrapped, its tools built. */
interface ResolvedChoices {
  readonly engine?: Engine;
  readonly tools?: RunTools;
  readonly defaults: RunOverrides;
}

/** A session that chose nothing: shared, since a server holds many such sessions. */
const NO_CHOICES: ResolvedChoices = Object.freeze({ defaults: Object.freeze({}) });

/** The run's overrides over the session's defaults, field by field; an unset field keeps the default. */
function mergeOverrides(defaults: RunOverrides, overrides: RunOverrides): RunOverrides {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) merged[key] = value;
  return merged as RunOverrides;
}

interface ActiveRun {
  readonly turn_id: string;
  readonly cancel$: Subject<void>;
  subscription?: Subscription;
  blocks: readonly Block[];
}

/**
 * A class rather than a closure record: a server holds one per conversation, and prototype methods
 * cost nothing per instance where five closures and their context did.
 */
class LoopSession implements Session {
  readonly conv_id: string;
  readonly session_id: string;
  readonly created_at: number;
  readonly owner?: string;
  // Declared, not defined: only forks carry it, so other sessions (a server holds thousands) pay no slot for it.
  declare readonly forked_from?: ForkOrigin;
  profile?: string;
  private readonly finished: Turn[] = [];
  private active: ActiveRun | undefined;
  private chosen: ResolvedChoices = NO_CHOICES;
  private closed = false;

  constructor(
    private readonly ports: LoopPorts,
    identity: SessionIdentity,
    private readonly settings: SessionSettings,
  ) {
    this.conv_id = identity.conv_id;
    this.session_id = identity.session_id;
    this.created_at = identity.created_at;
    if (identity.owner !== undefined) this.owner = identity.owner;
    if (identity.forked_from !== undefined) this.forked_from = identity.forked_from;
  }

  get running(): boolean {
    return this.active !== undefined;
  }

  turns(): Turn[] {
    const { active, finished } = this;
    return active ? [...finished, { id: active.turn_id, blocks: active.blocks }] : [...finished];
  }

  configure({ engine, tools, profile, defaults }: SessionChoices): void {
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active || this.finished.length > 0) throw new SessionStartedError(this.conv_id);
    const { settings } = this;
    const nothing = !engine && !tools && !defaults;
    this.chosen = nothing ? NO_CHOICES : {
      defaults: defaults ?? {},
      ...(engine ? { engine: settings.engineFor(engine) } : {}),
      ...(tools ? { tools: settings.toolsFor(tools) } : {}),
    };
    // Assigned, never deleted: `delete` would turn every session object into a slow, larger dictionary.
    this.profile = profile;
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
    const run = this.runContext(ports.ids.next('inf'), ports.ids.next('turn'), overrides, engine, tools);
    return this.launch(createLoopState(run, [userBlock]), false);
  }

  resume(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): RunHandle {
    return this.launch(this.restored(checkpoint, prepare), true);
  }

  park(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState, wait: (state: LoopState) => Observable<LoopState>): void {
    const { ports, settings } = this;
    const state = this.restored(checkpoint, prepare);
    const parked: ActiveRun = { turn_id: state.run.turn_id, cancel$: new Subject<void>(), blocks: state.blocks };
    const held = new Subscription();
    parked.subscription = held;
    this.active = parked;
    settings.onActivity?.(this);
    held.add(
      parked.cancel$.subscribe(() => {
        // The pause's teardown resolves it as `cancelled`, then the run ends as a cancelled loop does.
        held.unsubscribe();
        const result = cancelledAt(ports, state);
        this.finished.push(result.turn);
        settings.onRunEnded?.(this, result);
        this.active = undefined;
        settings.onActivity?.(this);
      }),
    );
    held.add(
      wait(state).subscribe((resolved) => {
        if (this.active !== parked) return;
        held.unsubscribe();
        this.launch(resolved, true);
      }),
    );
  }

  /** A checkpoint's state, with the session's engine and tools, adjusted by `prepare`. */
  private restored(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): LoopState {
    if (this.closed) throw new SessionClosedError(this.conv_id);
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    const overrides: RunOverrides = {
      ...(checkpoint.allowed_tools ? { tools: checkpoint.allowed_tools } : {}),
      ...(checkpoint.system_prompt !== undefined ? { system_prompt: checkpoint.system_prompt } : {}),
      ...(checkpoint.max_iterations !== undefined ? { max_iterations: checkpoint.max_iterations } : {}),
    };
    const run = this.runContext(checkpoint.inference_id, checkpoint.turn_id, overrides, this.chosen.engine, this.chosen.tools);
    const state = createLoopState(run, checkpoint.blocks, { next: checkpoint.next, iteration: checkpoint.iteration, decision: checkpoint.decision });
    return prepare(state);
  }

  restoreTurns(turns: readonly Turn[]): void {
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    this.finished.splice(0, this.finished.length, ...turns);
  }

  /** What stays fixed during one run: ids, the transcript before it, its limits, engine and tools. */
  private runContext(inference_id: string, turn_id: string, overrides: RunOverrides, engine?: Engine, tools?: RunTools): RunContext {
    const systemPrompt = overrides.system_prompt ?? this.settings.systemPrompt;
    const system: Block[] = systemPrompt ? [{ id: `${this.session_id}:system`, kind: 'system', role: 'system', payload: { text: systemPrompt } }] : [];
    return {
      conv_id: this.conv_id,
      session_id: this.session_id,
      inference_id,
      turn_id,
      history: [...system, ...this.finished.flatMap((turn) => turn.blocks)],
      ...(overrides.tools ? { allowedTools: new Set(overrides.tools) } : {}),
      ...(overrides.max_iterations ? { maxIterations: overrides.max_iterations } : {}),
      ...(engine ? { engine } : {}),
      ...(tools ? { tools } : {}),
    };
  }

  /** Runs the loop from `initial` as the session's one active run. */
  private launch(initial: LoopState, resumed: boolean): RunHandle {
    const { ports, settings } = this;
    const { run } = initial;
    const { inference_id, turn_id } = run;
    const cancel$ = new Subject<void>();
    const handle = new LoopRunHandle(inference_id, turn_id, this.conv_id, settings.views.hub.lastSeq(this.conv_id), settings.views);
    const current: ActiveRun = { turn_id, cancel$, blocks: initial.blocks };
    this.active = current;
    settings.onActivity?.(this);
    const release = (): void => {
      if (this.active !== current) return;
      this.active = undefined;
      settings.onActivity?.(this);
    };
    const run$ = createRun$(ports, settings.loop, initial, cancel$, (blocks) => {
      current.blocks = blocks;
    }, resumed);
    current.subscription = run$.subscribe({
      next: (result) => {
        this.finished.push(result.turn);
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

  cancel(): boolean {
    if (!this.active) return false;
    this.active.cancel$.next();
    return true;
  }

  suspend(): void {
    this.closed = true;
    // Unsubscribed, not cancelled: the run stops where it stands and its checkpoint stays for the next start.
    this.active?.subscription?.unsubscribe();
    this.active = undefined;
  }

  dispose(): void {
    this.closed = true;
    this.active?.cancel$.next();
    this.active?.subscription?.unsubscribe();
    this.active = undefined;
    this.chosen.engine?.forget?.(this.conv_id);
  }
}
