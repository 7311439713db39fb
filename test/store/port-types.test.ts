import { describe, expectTypeOf, it } from 'vitest';
import type { RunCheckpoint, StoredFrame, StoredPause, StoredPauseDecision } from '../../src/core/store.js';
import type { LoopPhase } from '../../src/operators/loop-state.js';
import type { PauseInfo, SequencedEvent, StepwiseEvent } from '../../src/streams/events.js';
import type { PauseDecision } from '../../src/streams/step-commands.js';

/** The port keeps its own plain types (core imports nothing above it); the runtime's must fit them as they are. */
describe('store port types', () => {
  it('should take the hub frames, the controller pauses and decisions, and the loop phases as they are', () => {
    expectTypeOf<SequencedEvent>().toMatchTypeOf<StoredFrame<StepwiseEvent>>();
    expectTypeOf<PauseInfo>().toMatchTypeOf<StoredPause>();
    expectTypeOf<StoredPause>().toMatchTypeOf<PauseInfo>();
    expectTypeOf<PauseDecision>().toMatchTypeOf<StoredPauseDecision>();
    expectTypeOf<StoredPauseDecision>().toMatchTypeOf<PauseDecision>();
    expectTypeOf<LoopPhase>().toEqualTypeOf<RunCheckpoint['next']>();
  });
});
