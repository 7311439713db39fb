import type { Subject } from 'rxjs';
import type { Engine } from '../core/engine.js';
import { toJsonText } from '../core/json.js';
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
  /** Absent for a hibernated run ({@link SleepingRun}): nothing is subscribed to tell, `cancel` ends it itself. */
  readonly cancel$?: Subject<void>;
  blocks: readonly Block[];
  /** The run's handle, settled by whichever loop ends the run (a hibernated run's is rebuilt). */
  readonly handle?: LoopRunHandle;
  /** The run's own engine and tools (`start` with `engine` or `tools`), which a checkpoint cannot name. */
  readonly own?: Pick<RunContext, 'engine' | 'tools'>;
}


/** The ids a hibernated run's checkpoint shares with the pause it waits at. */
export type CheckpointIds = Pick<RunCheckpoint, 'conv_id' | 'session_id' | 'inference_id' | 'turn_id'>;

/**
 * A hibernated run (docs/protocol.md, Durability): its checkpoint kept as JSON text, which costs a
 * fraction of the heap of the objects it was parsed into, and parsed again only when the run is
 * rebuilt, cancelled or its turn read. The ids are left out of the text and taken from the pause the
 * run waits at (`at`), whose strings the controller holds anyway. The run's blocks, as the store
 * keeps them, are that checkpoint's: a woken run goes on from what recovery would have read.
 */
export class SleepingRun implements ActiveRun {
  private readonly text: string;
  declare readonly handle?: LoopRunHandle;
  declare readonly own?: Pick<RunContext, 'engine' | 'tools'>;

  constructor(
    checkpoint: RunCheckpoint,
    private readonly at: CheckpointIds,
    { handle, own }: Pick<ActiveRun, 'handle' | 'own'>,
  ) {
    const { conv_id: _conv, session_id: _session, inference_id: _inference, turn_id: _turn, ...rest } = checkpoint;
    this.text = flat(toJsonText(rest));
    // Only when there is one: most hibernated runs were restored, or started by a caller that kept no handle.
    if (handle) this.handle = handle;
    if (own) this.own = own;
  }

  get turn_id(): string {
    return this.at.turn_id;
  }

  get checkpoint(): RunCheckpoint {
    const { conv_id, session_id, inference_id, turn_id } = this.at;
    return { conv_id, session_id, inference_id, turn_id, ...(JSON.parse(this.text) as Omit<RunCheckpoint, keyof CheckpointIds>) };
  }

  get blocks(): readonly Block[] {
    return (JSON.parse(this.text) as Pick<RunCheckpoint, 'blocks'>).blocks;
  }
}

/**
 * The string itself, in one piece: V8's JSON.stringify builds a long result as a rope of the parts it
 * wrote, which held as is costs several times the text. Reading a character makes V8 flatten it in
 * place, and the garbage collector then drops the rope's parts.
 */
function flat(text: string): string {
  text.charCodeAt(0);
  return text;
}
