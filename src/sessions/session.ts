import { AsyncSubject, Subject, firstValueFrom, type Observable, type OperatorFunction, type Subscription } from 'rxjs';
import type { Block, Turn } from '../core/turns.js';
import type { LoopPorts, LoopState } from '../operators/loop-state.js';
import { createRun$, type RunResult } from './run.js';

/** Per-run choices (the `/chat` overrides). */
export interface RunOverrides {
  /** Allow-list of tool names for this run; unknown names are refused by `start`. */
  readonly tools?: readonly string[];
  readonly system_prompt?: string;
  readonly max_iterations?: number;
}

export interface StartRunInput {
  readonly prompt: string;
  readonly overrides?: RunOverrides;
}

export interface RunHandle {
  readonly inference_id: string;
  readonly turn_id: string;
  /** The result, also for late subscribers (an AsyncSubject: one value, kept after completion). */
  readonly result$: Observable<RunResult>;
  result(): Promise<RunResult>;
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
}

/** A conversation's one session: its turns, its single active run, cancel. */
export interface Session extends SessionIdentity {
  readonly running: boolean;
  /** Finished turns, then the running turn as it stands. */
  turns(): Turn[];
  start(input: StartRunInput): RunHandle;
  /** Cancels the active run; false when none was running. */
  cancel(): boolean;
  dispose(): void;
}

export interface SessionSettings {
  /** The runtime's tool loop: built once, shared by every run of every session. */
  readonly loop: OperatorFunction<LoopState, LoopState>;
  readonly systemPrompt?: string;
}

export function createSession(ports: LoopPorts, identity: SessionIdentity, settings: SessionSettings): Session {
  return new LoopSession(ports, identity, settings);
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
  private readonly finished: Turn[] = [];
  private active: ActiveRun | undefined;

  constructor(
    private readonly ports: LoopPorts,
    identity: SessionIdentity,
    private readonly settings: SessionSettings,
  ) {
    this.conv_id = identity.conv_id;
    this.session_id = identity.session_id;
    this.created_at = identity.created_at;
    if (identity.owner !== undefined) this.owner = identity.owner;
  }

  get running(): boolean {
    return this.active !== undefined;
  }

  turns(): Turn[] {
    const { active, finished } = this;
    return active ? [...finished, { id: active.turn_id, blocks: active.blocks }] : [...finished];
  }

  start({ prompt, overrides = {} }: StartRunInput): RunHandle {
    const { ports, settings } = this;
    if (this.active) throw new RunInProgressError(this.conv_id, this.session_id);
    const unknown = overrides.tools ? ports.registry.unknown(overrides.tools) : [];
    if (unknown.length > 0) throw new UnknownToolsError(unknown);
    const turn_id = ports.ids.next('turn');
    const inference_id = ports.ids.next('inf');
    const systemPrompt = overrides.system_prompt ?? settings.systemPrompt;
    const system: Block[] = systemPrompt ? [{ id: `${this.session_id}:system`, kind: 'system', role: 'system', payload: { text: systemPrompt } }] : [];
    const cancel$ = new Subject<void>();
    const userBlock: Block = { id: ports.ids.next('block'), kind: 'user', role: 'user', payload: { text: prompt } };
    const run = {
      conv_id: this.conv_id,
      session_id: this.session_id,
      inference_id,
      turn_id,
      history: [...system, ...this.finished.flatMap((turn) => turn.blocks)],
      ...(overrides.tools ? { allowedTools: new Set(overrides.tools) } : {}),
      ...(overrides.max_iterations ? { maxIterations: overrides.max_iterations } : {}),
    };
    const result$ = new AsyncSubject<RunResult>();
    const current: ActiveRun = { turn_id, cancel$, blocks: [userBlock] };
    this.active = current;
    const release = (): void => {
      if (this.active === current) this.active = undefined;
    };
    current.subscription = createRun$(ports, settings.loop, run, userBlock, cancel$, (blocks) => {
      current.blocks = blocks;
    }).subscribe({
      next: (result) => {
        this.finished.push(result.turn);
        release();
        result$.next(result);
        result$.complete();
      },
      // Only a programmer bug reaches here; free the session so it is not wedged.
      error: (error: unknown) => {
        release();
        result$.error(error);
      },
    });
    return { inference_id, turn_id, result$: result$.asObservable(), result: () => firstValueFrom(result$) };
  }

  cancel(): boolean {
    if (!this.active) return false;
    this.active.cancel$.next();
    return true;
  }

  dispose(): void {
    this.active?.cancel$.next();
    this.active?.subscription?.unsubscribe();
    this.active = undefined;
  }
}
