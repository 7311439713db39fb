import { describe, expectTypeOf, it } from 'vitest';
import type { RunCheckpoint, StoredFrame, StoredPause, StoredPauseDecision } from '../../src/core/store.js';
import type { LoopPhase } from '../../src/operators/loop-state.js';
import type { PauseInfo, SequencedEvent, StepwiseEvent } from '../../src/streams/events.js';
import type { PauseDecision } from '../../src/streams/step-commands.js';

/** The pause and decision types are core's own, once (src/core/pauses.ts): the store, controller and loop name the same types. */
describe('store port types', () => {
  it('should take the hub frames, the controller pauses and decisions, and the loop phases as they are', () => {
    expectTypeOf<SequencedEvent>().toMatchTypeOf<StoredFrame<StepwiseEvent>>();
    expectTypeOf<StoredPause>().toEqualTypeOf<PauseInfo>();
    expectTypeOf<StoredPauseDecision>().toEqualTypeOf<PauseDecision>();
    expectTypeOf<LoopPhase>().toEqualTypeOf<RunCheckpoint['next']>();
  });
});
