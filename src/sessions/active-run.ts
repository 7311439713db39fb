import type { Subject } from 'rxjs';
import type { Engine } from '../core/engine.js';
import type { RunCheckpoint } from '../core/store.js';
import type { Block } from '../core/turns.js';
import type { RunContext, RunTools } from '../operators/loop-state.js';
import type { LoopRunHandle } from './run-handle.js';
import type { RunOverrides } from './session.js';

/** What a session (./loop-session.ts) holds: its choices, and its run while one is active. */

/** The session's choices, resolved once: its engine wrapped, its tools built. */
export interface ResolvedChoices {
  readonly engine?: Engine;
  readonly tools?: RunTools;
  readonly defaults: RunOverrides;
}

/** A session that chose nothing: shared, since a server holds many such sessions. */
export const NO_CHOICES: ResolvedChoices = Object.freeze({ defaults: Object.freeze({}) });

export interface ActiveRun {
  readonly turn_id: string;
  /** Absent for a hibernated run: nothing is subscribed to tell, `cancel` ends it itself. */
  readonly cancel$?: Subject<void>;
  blocks: readonly Block[];
  /** The run's handle, settled by whichever loop ends the run (a hibernated run's is rebuilt). */
  readonly handle?: LoopRunHandle;
  /** Hibernated: the checkpoint the run is rebuilt from when its pause resolves; no loop is subscribed. */
  readonly checkpoint?: RunCheckpoint;
  /** The run's own engine and tools (`start` with `engine` or `tools`), which a checkpoint cannot name. */
  readonly own?: Pick<RunContext, 'engine' | 'tools'>;
}

