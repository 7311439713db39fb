import { asyncScheduler } from 'rxjs';
import { createLocalCommands } from '../core/commands.js';
import { createRandomIds } from '../core/ids.js';
import type { JsonValue, Store } from '../core/store.js';
import type { LoopPorts } from '../operators/loop-state.js';
import { createMemoryGrants } from '../store/memory-grants.js';
import { createMemoryStore } from '../store/memory.js';
import { createEventHub, DEFAULT_BUFFER_SIZE, type EventHub } from '../streams/event-hub.js';
import { createFrameLog } from '../streams/frame-log.js';
import type { StepController } from '../streams/step-controller.js';
import { createRuntimeTracing } from '../telemetry/runtime-tracing.js';
import { createLocalDirectory } from './directory.js';
import { forkConversation, type ForkPorts } from './fork.js';
import { createGrantBook, grantTargetOf } from './grant-book.js';
import { hibernateAfterOf } from './hibernation.js';
import { createRunBuilders, createStoredLoop } from './loop-wiring.js';
import { restoreSnapshot, takeOverConversation, type RestorePorts } from './recovery.js';
import { createSessionRegistry } from './registry.js';
import { createGatedPublish, createRuntimeController, createUnrestoredWrites, serviceOf, wireHibernation, withInferenceLog } from './runtime-wiring.js';
import type { HeldSession, SessionChoices } from './session.js';
import { createSessionIndex } from './session-index.js';
import type { Stepwise, StepwiseConfig } from './stepwise.js';
import { storeReadsNow } from './store-now.js';
import { createStoreWriter } from './store-writer.js';
import { createWriteGate } from './write-gate.js';

export type { OpenSessionOptions, SessionRegistry } from './registry.js';
export type { Stepwise, StepwiseConfig } from './stepwise.js';

/**
 * Wires a runtime, each part built before what uses it: where events go (the hub, the store and what
 * writes to it), then what runs (the controller, tools, the loop and the session registry), then the
 * runtime's own doings. Each piece is built in its own module; this only connects them.
 */
export function createStepwise(options: StepwiseConfig): Stepwise {
  const { config, inferences } = withInferenceLog(options);
  const recording = createRecording(config);
  const { hub, frames, store, tracing } = recording;
  const running = createRunning(config, recording);
  const { controller, sessions, ports, hibernation, hibernateAfterMs } = running;
  const service = serviceOf(config, store);
  const claim = (convId: string): Promise<boolean> => service.ownership.claim(convId);
  const local: Stepwise = {
    hub, frames, store, inferences, controller, sessions, claim,
    registry: ports.registry, engine: ports.engine, grants: running.grants,
    directory: createLocalDirectory({ sessions, controller, frames }),
    commands: (handler) => createLocalCommands(handler, (pauseId) => controller.convOf(pauseId)),
    ...recoveryAndForks(store, {
      loop: ports, sessions, controller, hub, claim, restoreEngine: running.restoreEngine,
      unrestored: createUnrestoredWrites(recording.gate, recording.writer, store),
      ...(hibernateAfterMs === undefined ? {} : { restoreHibernated: (session, checkpoint, pause) => hibernation.restoreHibernated(controller, session, checkpoint, pause) }),
    }),
    dispose: () => {
      if (!sessions.end()) return;
      tracing.unsubscribe();
      frames.dispose();
    },
    suspend: async () => {
      if (sessions.suspend()) tracing.unsubscribe();
      await store.flush();
      frames.dispose();
    },
  };
  return service.join(local);
}

/** Where a runtime's events go: the hub, the store, what writes to it, and what the gate lets through. */
function createRecording(config: StepwiseConfig) {
  const scheduler = config.scheduler ?? asyncScheduler;
  // Keeping what the hub keeps: a store that persists nothing need not hold more than the replay buffer.
  const store = config.store ?? createMemoryStore({ maxFramesPerConversation: config.bufferSize ?? DEFAULT_BUFFER_SIZE });
  const readsNow = storeReadsNow(store);
  const hub = createEventHub({ ...(config.bufferSize === undefined ? {} : { bufferSize: config.bufferSize }), ...readsNow.hub });
  const writer = createStoreWriter(store, { engine: config.engine, scheduler });
  // Subscribed before anything else follows the hub, so every frame is appended as it is published.
  const frames = createFrameLog(hub, store, config.onFrameError === undefined ? {} : { onError: config.onFrameError });
  const tracing = createRuntimeTracing(hub.events$, config.tracer);
  const gate = createWriteGate();
  return { scheduler, store, readsNow, hub, writer, frames, tracing, gate, publish: createGatedPublish(gate, writer, hub) };
}

/** What runs a runtime's conversations: the controller and its hibernation, tools, grants, the loop, and the sessions. */
function createRunning(config: StepwiseConfig, recording: ReturnType<typeof createRecording>) {
  const { scheduler, store, hub, frames, writer, gate, publish, readsNow, tracing } = recording;
  const ids = config.ids ?? createRandomIds();
  // Made first and filled by the registry: every part below reads the sessions held here through it.
  const index = createSessionIndex();
  const sessionOf = (convId: string): HeldSession | undefined => index.byConv.get(convId);
  const hibernation = wireHibernation(config, { store, hub, frames, scheduler, sessionOf });
  const hibernateAfterMs = hibernateAfterOf(config, store);
  const controller = createRuntimeController(config, { scheduler, ids, publish, gate, writer, store, index, hibernate: hibernation.hibernate, hibernateAfterMs });
  const { toolsFor, engineFor } = createRunBuilders(config, scheduler);
  const { registry, executor } = toolsFor(config.tools ?? []);
  const grants = createGrantBook({ store: store.grants ?? createMemoryGrants(), scheduler, ids, targetOf: (convId) => grantTargetOf(sessionOf(convId)) });
  const ports: LoopPorts = { engine: engineFor(config.engine), registry, executor, controller, publish, scheduler, ids, grants };
  const loop = createStoredLoop(ports, config, { gate, writer, store, profileOf: (convId) => sessionOf(convId)?.profile });
  const restoreEngine = (convId: string, state: JsonValue, choices: SessionChoices | undefined): void => (choices?.engine ?? config.engine).restore?.(convId, state);
  const settings = { loop, views: { hub, controller }, toolsFor, engineFor, ...(config.systemPrompt === undefined ? {} : { systemPrompt: config.systemPrompt }), ...readsNow.sessions };
  const retention = config.retention === undefined ? {} : { retention: config.retention };
  const sessions = createSessionRegistry({ loop: ports, settings, index, hub, frames, store, writer, gate, controller, restoreEngine, onRunStarting: () => tracing.runStarting(), ...retention });
  return { controller, sessions, ports, grants, hibernation, hibernateAfterMs, restoreEngine };
}

/** `recover`, `takeOver` and `fork`: runs brought back from the store, or copied from it. */
function recoveryAndForks(
  store: Store,
  ports: Pick<ForkPorts, 'claim' | 'restoreEngine'> & Pick<RestorePorts, 'restoreHibernated' | 'unrestored'> & {
    readonly loop: LoopPorts;
    readonly sessions: ReturnType<typeof createSessionRegistry>;
    readonly controller: StepController;
    readonly hub: EventHub;
  },
): Pick<Stepwise, 'recover' | 'takeOver' | 'fork'> {
  const { loop, sessions, controller, hub } = ports;
  const restorePorts: RestorePorts = {
    loop,
    reopen: sessions.reopen,
    expectPause: controller.expect,
    hub,
    unrestored: ports.unrestored,
    ...(ports.restoreHibernated ? { restoreHibernated: ports.restoreHibernated } : {}),
  };
  const open: ForkPorts['open'] = (identity, choices) => sessions.open({ ...identity, ...choices });
  const forkPorts: ForkPorts = { loop, controller, store, claim: ports.claim, open, restoreEngine: ports.restoreEngine };
  return {
    recover: async (options) => restoreSnapshot(await store.load(), restorePorts, options),
    takeOver: (convId, options) => takeOverConversation(store, convId, restorePorts, options),
    fork: (request) => forkConversation(forkPorts, request),
  };
}
