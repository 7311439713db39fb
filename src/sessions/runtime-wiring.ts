import type { SchedulerLike } from 'rxjs';
import type { RunOwnership } from '../core/ownership.js';
import { SOLE_OWNERSHIP } from '../core/ownership.js';
import type { Store } from '../core/store.js';
import type { LoopPorts } from '../operators/loop-state.js';
import type { EventHub } from '../streams/event-hub.js';
import { immediateScheduler } from '../streams/immediate-scheduler.js';
import type { StepwiseEvent } from '../streams/events.js';
import { createStepController, type StepController } from '../streams/step-controller.js';
import { createHibernation, type Hibernation, type HibernationPorts, type HibernationSetting } from './hibernation.js';
import type { SessionIndex } from './session-index.js';
import { createSliceQueue } from './slice-queue.js';
import { createInferenceLog, type InferenceLog } from './inference-log.js';
import type { Stepwise, StepwiseConfig } from './stepwise.js';
import { isServiceStore, type ServiceInstance } from './service.js';
import type { StoreWriter } from './store-writer.js';
import type { UnrestoredWrites } from './unrestored.js';
import type { WriteGate } from './write-gate.js';

/** Pieces `createStepwise` (./runtime.ts) wires, each small enough to read alone. */

/** The runtime's config with the inference log's middlewares around the user's. */
export function withInferenceLog(options: StepwiseConfig): { config: StepwiseConfig; inferences: InferenceLog } {
  const inferences = createInferenceLog(options.inferenceLog);
  // The log names each model message before any other middleware, and keeps what the engine itself receives.
  return { config: { ...options, middlewares: [inferences.name, ...(options.middlewares ?? []), inferences.capture] }, inferences };
}

/** Who runs a conversation, and the runtime as the service's when its store is one (./service.ts): its ownership is asked only once runs start. */
export function serviceOf(config: StepwiseConfig, store: Store): { ownership: RunOwnership; join(local: Stepwise): Stepwise } {
  if (!isServiceStore(store)) return { ownership: config.ownership ?? SOLE_OWNERSHIP, join: (local) => local };
  let joined: ServiceInstance | undefined;
  return {
    ownership: config.ownership ?? { claim: (convId) => joined?.ownership.claim(convId) ?? Promise.resolve(false) },
    join: (local) => (joined = store.joinService(local)).stepwise,
  };
}

/** Publishes an event once the store was told of it, unless the gate says the conversation is silent. */
export function createGatedPublish(gate: WriteGate, writer: StoreWriter, hub: EventHub): (event: StepwiseEvent) => void {
  return (event) => {
    if (!gate.writes(event.conv_id)) return;
    writer.published(event);
    hub.publish(event);
  };
}

/** The runtime's step controller: every resolution and step mode change stored unless the gate says the conversation is silent. */
export function createRuntimeController(
  config: StepwiseConfig,
  ports: Pick<LoopPorts, 'scheduler' | 'ids' | 'publish'> & { readonly gate: WriteGate; readonly writer: StoreWriter; readonly store: Pick<Store, 'committed$' | 'durable'>; readonly index: SessionIndex } & HibernationSetting,
): StepController {
  const { scheduler, ids, publish, gate, writer, store, index, hibernate, hibernateAfterMs } = ports;
  return createStepController(
    {
      scheduler,
      ids,
      publish,
      onResolved: (resolution) => {
        if (gate.writes(resolution.pause.conv_id)) writer.resolved(resolution);
      },
      // Only for a session held here: a stored one's step mode comes back through `restoreStep`.
      onStepMode: (sessionId, step) => {
        const convId = index.convBySession.get(sessionId);
        if (convId !== undefined) writer.step(convId, step);
      },
      committed$: (convId) => store.committed$(convId),
      hibernate,
      ...(config.onFrameError === undefined ? {} : { onError: config.onFrameError }),
      // A durable store's commits settle on later tasks of the real clock (never a virtual one): a run
      // it resumes is handed back on one too, after the command that resumed it has answered.
      ...(store.durable ? { resumeScheduler: immediateScheduler } : {}),
    },
    {
      ...(hibernateAfterMs === undefined ? {} : { hibernateAfterMs }),
      ...(config.pauseTimeoutMs === undefined ? {} : { pauseTimeoutMs: config.pauseTimeoutMs }),
      ...(config.timeoutAction === undefined ? {} : { timeoutAction: config.timeoutAction }),
    },
  );
}

/** Hibernation, its slices on the runtime's clock; a real clock's slices wait for the turn's commits, not for a timer. */
export function wireHibernation(config: StepwiseConfig, ports: Omit<HibernationPorts, 'slices'> & { readonly scheduler: SchedulerLike }): Hibernation {
  const { scheduler, ...rest } = ports;
  const slices = createSliceQueue(scheduler, config.scheduler ? {} : { defer: setImmediate });
  return createHibernation({ ...rest, slices });
}

/** What is stored of a run recovery could not restore (./unrestored.ts), unless the gate says its conversation is silent. */
export function createUnrestoredWrites(gate: WriteGate, writer: StoreWriter, store: Pick<Store, 'deleteCheckpoint'>): UnrestoredWrites {
  return {
    ended: (result) => {
      if (gate.writes(result.conv_id)) writer.runEnded(result);
    },
    resolved: (resolution) => {
      if (gate.writes(resolution.pause.conv_id)) writer.resolved(resolution);
    },
    dropped: (convId, inferenceId) => {
      if (gate.writes(convId)) store.deleteCheckpoint(convId, inferenceId);
    },
  };
}
