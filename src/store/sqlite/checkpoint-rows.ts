import type { RunCheckpoint, StoredConversation } from '../../core/store.js';
import { StoredRowError } from '../../core/store-errors.js';
import type { Block, Turn } from '../../core/turns.js';
import type { Writable } from '../../core/writable.js';
import { readBlocks, readCheckpoint } from '../stored-rows.js';

/*
 * Checkpoints read back from their rows (docs/protocol.md, Durability): checked as every stored row
 * is, and given their blocks, which are their own, or in their JSON (before version 4), or their turn's.
 */

/** A row of `checkpoints`. */
export interface CheckpointRow {
  readonly conv_id: string;
  readonly inference_id: string;
  readonly checkpoint: string;
  readonly blocks: string | null;
}
/** The same row as a raw statement gives it, in that order. */
export type CheckpointTuple = readonly [convId: string, inferenceId: string, checkpoint: string, blocks: string | null];

export const checkpointRow = ([conv_id, inference_id, checkpoint, blocks]: CheckpointTuple): CheckpointRow => ({ conv_id, inference_id, checkpoint, blocks });

export const checkpointKey = ([conv_id, inference_id]: CheckpointTuple): { conv_id: string; inference_id: string } => ({ conv_id, inference_id });

/** Where a checkpoint finds blocks that are its turn's. */
type TurnBlocks = (checkpoint: RunCheckpoint) => readonly Block[] | undefined;

/**
 * A checkpoint row's blocks: its own, or inside its JSON (written before schema version 4), or its
 * turn's (writes.ts), from `turnBlocks`. With `lazy` (a restart's load, `lazyTurnBlocks`) a turn's are
 * copied when first read, as a turn's own are parsed then: a run restored asleep never reads them.
 */
export function toCheckpoint(row: CheckpointRow, turnBlocks: TurnBlocks, lazy?: PropertyDescriptor): RunCheckpoint {
  // Fresh from JSON.parse: completed in place, as the records are.
  const checkpoint = readCheckpoint(row.checkpoint, row) as Writable<RunCheckpoint>;
  if (row.blocks !== null) checkpoint.blocks = ownBlocks(row.blocks, row.inference_id);
  else if (checkpoint.blocks !== undefined) return checkpoint;
  else if (lazy) Object.defineProperty(checkpoint, 'blocks', lazy);
  else checkpoint.blocks = copyOfTurn(checkpoint, turnBlocks);
  return checkpoint;
}

/**
 * The `blocks` of the checkpoints of one load that share their turn's (writes.ts): that turn's blocks,
 * parsed once with the turn and copied, so that neither sees the other's changes; a turn that is not
 * among the conversations loaded is read on its own (`fromStore`). One getter for every checkpoint of
 * the load, reading the checkpoint it is called on, where a getter of each checkpoint's own gave each
 * its own hidden class, two closures and a copy of the checkpoint, for runs that never read them.
 */
export function lazyTurnBlocks(conversations: readonly StoredConversation[], fromStore: TurnBlocks): PropertyDescriptor {
  // Only once some checkpoint's blocks are read: a restart whose runs are all paused builds none.
  let turnsOf: Map<string, readonly Turn[]> | undefined;
  const turnBlocks: TurnBlocks = (checkpoint) => {
    turnsOf ??= new Map(conversations.map(({ conv_id, turns }) => [conv_id, turns]));
    const turn = turnsOf.get(checkpoint.conv_id)?.find(({ id }) => id === checkpoint.turn_id);
    return turn ? turn.blocks : fromStore(checkpoint);
  };
  return {
    enumerable: true,
    configurable: true,
    get(this: RunCheckpoint): Block[] {
      const blocks = copyOfTurn(this, turnBlocks);
      // The checkpoint's own from then on, as if it had been read with them.
      Object.defineProperty(this, 'blocks', { value: blocks, enumerable: true, configurable: true });
      return blocks;
    },
  };
}

/** A copy of the checkpoint's turn's blocks; a turn that has no row is a `StoredRowError`: the run cannot go on from a checkpoint without its blocks. */
function copyOfTurn(checkpoint: RunCheckpoint, turnBlocks: TurnBlocks): Block[] {
  const blocks = turnBlocks(checkpoint);
  if (!blocks) throw new StoredRowError(`the turn ${checkpoint.turn_id} of run ${checkpoint.inference_id}`, 'it has no stored row');
  return [...blocks];
}

/**
 * A checkpoint row's own blocks. A function of its own, so that no closure in `toCheckpoint` names the
 * row: its blocks would then hold the row, its JSON text and its keys.
 */
const ownBlocks = (json: string, inferenceId: string): Block[] => readBlocks(json, () => `the blocks of the checkpoint of run ${inferenceId}`);
