import type { PauseInfo } from '../core/pauses.js';
import type { StepSetting } from '../core/store.js';
import type { StepController } from './step-controller.js';

export interface StoredStepPorts {
  /** The conversation of a session this runtime holds; undefined for one it does not. */
  readonly convOfSession: (sessionId: string) => string | undefined;
  /** Stores a conversation's step setting (queued, returns at once). */
  readonly storeStep: (convId: string, step: StepSetting) => void;
}

/** The step controller of a runtime with a store: every step mode change is stored, and stored pauses come back. */
export interface StoredStepController extends StepController {
  /** A session's step mode and filter, as the store keeps them. */
  stepOf(sessionId: string): StepSetting;
  /** Recovery: the run's next pause at this phase takes the stored pause's id and deadline. */
  expect(pause: PauseInfo): void;
}

/**
 * The controller as the runtime uses it (docs/protocol.md, Durability): enabling or disabling step
 * mode is stored for the session's conversation, and a run re-entered after a restart or a takeover
 * pauses again with the `pause_id` and `deadline_ms` it had, not new ones.
 */
export function withStoredSteps(core: StepController, ports: StoredStepPorts): StoredStepController {
  // Recovery's pauses by run: the run's next pause at that phase takes the stored id and deadline.
  const restoring = new Map<string, PauseInfo>();
  const stepOf = (sessionId: string): StepSetting => {
    const filter = core.filterOf(sessionId);
    return filter ? { enabled: core.isEnabled(sessionId), filter } : { enabled: core.isEnabled(sessionId) };
  };
  const stored = (sessionId: string): void => {
    const convId = ports.convOfSession(sessionId);
    if (convId !== undefined) ports.storeStep(convId, stepOf(sessionId));
  };
  return {
    ...core,
    stepOf,
    expect: (pause) => void restoring.set(pause.inference_id, pause),
    enable: (sessionId, filter) => {
      core.enable(sessionId, filter);
      stored(sessionId);
    },
    disable: (sessionId) => {
      const released = core.disable(sessionId);
      stored(sessionId);
      return released;
    },
    restores: (inferenceId, phase) => restoring.get(inferenceId)?.phase === phase,
    pause: (request) => {
      const pause = restoring.get(request.inference_id);
      if (pause?.phase !== request.phase) return core.pause(request);
      restoring.delete(request.inference_id);
      return core.pause({ ...request, restore: { pause_id: pause.pause_id, deadline_ms: pause.deadline_ms } });
    },
  };
}
