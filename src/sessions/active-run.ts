import type { Subject } from 'rxjs';
import type { Engine } from '../core/engine.js';
import { toJsonText } from '../core/json.js';
import { StoredRowError } from '../core/store-errors.js';
import type { RunCheckpoint } from '../core/store.js';
import type { Block } from '../core/turns.js';
import type { RunContext, RunTools } from '../operators/loop-state.js';
import type { HeldPause } from '../streams/controller-settings.js';
import type { LoopRunHandle } from './run-handle.js';
import type { RunOverrides, SessionChoices, SessionSettings, StoredCheckpoint } from './session.js';

/** What a session (./loop-session.ts) holds: its choices, and its run while one is active. */

/** The session's choices, resolved once: its engine wrapped, its tools built. */
export interface ResolvedChoices {
  readonly engine?: Engine;
  readonly tools?: RunTools;
  readonly defaults: RunOverrides;
}

/** A session that chose nothing: shared, since a server holds many such sessions. */
export const NO_CHOICES: ResolvedChoices = Object.freeze({ defaults: Object.freeze({}) });

/** A session's choices, its engine wrapped and its tools built by the runtime's `settings`. */
export function resolveChoices(settings: Pick<SessionSettings, 'engineFor' | 'toolsFor'>, { engine, tools, defaults }: Omit<SessionChoices, 'profile'>): ResolvedChoices {
  if (!engine && !tools && !defaults) return NO_CHOICES;
  return {
    defaults: defaults ?? {},
    ...(engine ? { engine: settings.engineFor(engine) } : {}),
    ...(tools ? { tools: settings.toolsFor(tools) } : {}),
  };
}

export interface ActiveRun {
  readonly turn_id: string;
  /** Tells its loop to end as cancelled (a hibernated run, {@link HibernatedRun}, has no loop to tell). */
  readonly cancel$: Subject<void>;
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
 * run waits at, whose strings the controller holds anyway. The run's blocks, as the store
 * keeps them, are that checkpoint's: a woken run goes on from what recovery would have read.
 *
 * With a store that reads at once (`stored`, SQLite's `checkpointNow`) it keeps nothing, not even that
 * reader (its session has it): the checkpoint is read again from the store, which has it as long as
 * the run has not ended.
 */
export class HibernatedRun {
  // Declared, and set only without such a store: the runs of one that reads at once carry no slot for it.
  declare private readonly kept?: string;
  declare readonly handle?: LoopRunHandle;
  declare readonly own?: Pick<RunContext, 'engine' | 'tools'>;

  constructor(
    checkpoint: RunCheckpoint,
    /**
     * The pause it waits at, held here rather than as a run subscription of the registry (a map entry
     * per hibernated run); its checkpoint's ids are the pause's.
     */
    readonly pause: HeldPause,
    { handle, own }: Pick<ActiveRun, 'handle' | 'own'>,
    stored: StoredCheckpoint | undefined,
  ) {
    if (!stored) this.kept = asText(checkpoint);
    // Only when there is one: most hibernated runs were restored, or started by a caller that kept no handle.
    if (handle) this.handle = handle;
    if (own) this.own = own;
  }

  get turn_id(): string {
    return this.pause.info.turn_id;
  }

  /**
   * Its checkpoint, read with `stored` when it kept none; throws when the store cannot say it: a
   * `StoreClosedError` (closed under its runtime), or one that it cannot be read back (docs/protocol.md, Durability).
   */
  read(stored: StoredCheckpoint | undefined): RunCheckpoint {
    const { kept } = this;
    const at = this.pause.info;
    if (kept === undefined) {
      const checkpoint = stored?.(at);
      if (!checkpoint) throw new StoredRowError(`the checkpoint of run ${at.inference_id}`, 'the store has none');
      return checkpoint;
    }
    const { conv_id, session_id, inference_id, turn_id } = at;
    return { conv_id, session_id, inference_id, turn_id, ...(JSON.parse(kept) as Omit<RunCheckpoint, keyof CheckpointIds>) };
  }
}

/** The checkpoint without the ids it shares with its pause, as flat JSON text. */
function asText(checkpoint: RunCheckpoint): string {
  const { conv_id: _conv, session_id: _session, inference_id: _inference, turn_id: _turn, ...rest } = checkpoint;
  return flat(toJsonText(rest));
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
