import { describe, expect, it } from 'vitest';
import { liveOps, type WriteOp } from '../../src/store/write-ops.js';
import { checkpoint, conversation, frames, pause } from './fixtures.js';

const turn = (conv_id: string, id: string, blocks = 0): WriteOp => ({
  kind: 'turn',
  conv_id,
  turn: { id, blocks: Array.from({ length: blocks }, (_, i) => ({ id: `b${i}`, kind: 'user', payload: { text: '' } })) },
});

describe('liveOps', () => {
  it('should write a turn, checkpoint, engine state or step setting once, in its first place with its last content', () => {
    const ops: WriteOp[] = [
      turn('c1', 't1', 1),
      { kind: 'checkpoint', checkpoint: checkpoint('c1', 'inf_1', { next: 'after_inference' }) },
      { kind: 'step', conv_id: 'c1', step: { enabled: true } },
      turn('c1', 't2', 1),
      turn('c1', 't1', 2),
      { kind: 'engine-state', conv_id: 'c1', state: 1 },
      { kind: 'checkpoint', checkpoint: checkpoint('c1', 'inf_1', { next: 'tools' }) },
      { kind: 'engine-state', conv_id: 'c1', state: 2 },
      { kind: 'step', conv_id: 'c1', step: { enabled: false } },
    ];
    expect(liveOps(ops)).toEqual([ops[4], ops[6], ops[8], ops[3], ops[7]]);
  });

  it('should not move a step setting before a whole record, nor any write before a delete', () => {
    const ops: WriteOp[] = [
      { kind: 'checkpoint', checkpoint: checkpoint('c1', 'inf_1') },
      { kind: 'step', conv_id: 'c1', step: { enabled: true } },
      { kind: 'conversation', record: conversation('c1') },
      { kind: 'step', conv_id: 'c1', step: { enabled: false } },
      { kind: 'checkpoint-deleted', conv_id: 'c1', inference_id: 'inf_1' },
      turn('c2', 't1'),
      { kind: 'conversation-deleted', conv_id: 'c1' },
      { kind: 'checkpoint', checkpoint: checkpoint('c1', 'inf_1') },
      turn('c2', 't1', 3),
    ];
    // The step setting before the whole record is dropped: the record sets it.
    expect(liveOps(ops)).toEqual([ops[4], ops[2], ops[3], ops[8], ops[6], ops[7]]);
  });

  it('should write a conversation record once, in the place of its last write, dropping the step settings before it', () => {
    const ops: WriteOp[] = [
      { kind: 'conversation', record: conversation('c1') },
      { kind: 'step', conv_id: 'c1', step: { enabled: true } },
      turn('c1', 't1'),
      { kind: 'conversation', record: conversation('c2') },
      { kind: 'conversation', record: conversation('c1', { step: { enabled: true }, profile: 'p' }) },
      { kind: 'step', conv_id: 'c1', step: { enabled: false } },
      { kind: 'conversation-deleted', conv_id: 'c2' },
      { kind: 'conversation', record: conversation('c2', { owner: 'bob' }) },
    ];
    expect(liveOps(ops)).toEqual([ops[2], ops[3], ops[4], ops[5], ops[6], ops[7]]);
  });

  it('should leave frames, pauses and decisions where they are', () => {
    const ops: WriteOp[] = [
      { kind: 'frames', frames: frames('c1', 1, 2) },
      { kind: 'pause', pause: pause('c1', 'p1') },
      { kind: 'frames', frames: frames('c1', 3, 3) },
      { kind: 'pause', pause: pause('c1', 'p1') },
    ];
    expect(liveOps(ops)).toEqual(ops);
  });
});
