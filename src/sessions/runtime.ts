import type { Tracer } from '@opentelemetry/api';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { createRandomIds, type IdSource } from '../core/ids.js';
import type { RunOwnership } from '../core/ownership.js';
import type { Engine, EngineMiddleware } from '../core/engine.js';
import type { LoopPorts } from '../operators/loop-state.js';
import type { SnapshotHook } from '../operators/snapshot-hook.js';
import { createEventHub, DEFAULT_BUFFER_SIZE, type EventHub } from '../streams/event-hub.js';
import { createFrameLog, type FrameLog } from '../streams/frame-log.js';
import type { LogFrame } from '../streams/frame-codec.js';
import type { StepController, TimeoutAction } from '../streams/step-controller.js';
import { withStoredSteps } from '../streams/stored-step-controller.js';
import type { JsonValue, Store } from '../core/store.js';
import { createMemoryStore } from '../store/memory.js';
import type { ToolErrorPolicy } from '../tools/define-tool.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { createRuntimeTracing } from '../telemetry/runtime-tracing.js';
import { hibernateAfterOf } from './hibernation.js';
import { forkConversation, type ForkPorts, type ForkRequest, type ForkResult } from './fork.js';
import { createRunBuilders, createStoredLoop } from './loop-wiring.js';
import { restoreSnapshot, takeOverConversation, type RecoverOptions, type RecoveryReport, type RestorePorts } from './recovery.js';
import { createSessionRegistry, type SessionRegistry } from './registry.js';
import { createLocalDirectory } from './directory.js';
import type { InferenceLog, InferenceLogConfig } from './inference-log.js';
import { createLocalCommands, type CommandHandler, type CommandPort } from '../core/commands.js';
import type { ConversationDirectory } from '../core/directory.js';
import type { RetentionConfig } from './retention.js';
import type { SessionChoices, ToolList } from './session.js';
import { storeReadsNow } from './store-now.js';
import { createStoreWriter } from './store-writer.js';
import { createGrantBook, grantTargetOf, type GrantBook } from './grant-book.js';
import { createMemoryGrants } from '../store/memory-grants.js';
import { createWriteGate } from './write-gate.js';
import { createGatedPublish, createRuntimeController, createUnrestoredWrites, serviceOf, wireHibernation, withInferenceLog } from './runtime-wiring.js';

export type { OpenSessionOptions, SessionRegistry } from './registry.js';

export interface StepwiseConfig {
  readonly engine: Engine;
  /** `[A, B, C]`: A wraps B wraps C wraps the engine. Default none. */
  readonly middlewares?: readonly EngineMiddleware[];
  readonly tools?: ToolList;
  /** Default asyncScheduler; a TestScheduler's in marble tests. */
  readonly scheduler?: SchedulerLike;
  /** Default random ids. */
  readonly ids?: IdSource;
  /** Default 30 000 ms. */
  readonly pauseTimeoutMs?: number;
  /** Default `continue`. */
  readonly timeoutAction?: TimeoutAction;
  /** Default 20. */
  readonly maxIterations?: number;
  /** Default 3. */
  readonly maxParallelTools?: number;
  /** Default 30 000 ms. */
  readonly toolTimeoutMs?: number;
  /** Default `continue`. */
  readonly toolPolicy?: ToolErrorPolicy;
  /** Default 3. */
  readonly toolMaxRetries?: number;
  /** Default 200 ms. */
  readonly toolRetryBaseDelayMs?: number;
  /** Default none. */
  readonly systemPrompt?: string;
  /** Frames kept per conversation for replay. Default 1000. */
  readonly bufferSize?: number;
  readonly onSnapshot?: SnapshotHook;
  /**
   * When finished sessions are closed (their turns and buffered events freed). Default
   * `{ idleMs: Infinity, maxSessions: 1000 }`: never by time, since a server's user expects a
   * conversation to be there when they come back to it, but at most 1000 kept, so a long-lived
   * server's memory stays bounded; past that the longest idle ones go first, running ones never, and
   * the newest tenth of the limit stays however many run. See {@link RetentionConfig}.
   */
  readonly retention?: RetentionConfig;
  /**
   * Where conversations, turns, pauses, checkpoints and decisions are kept (docs/protocol.md, Durability); the loop, hub
   * and controller never know which adapter it is. Default a memory store keeping `bufferSize` frames
   * per conversation (nothing survives the process). The caller owns it: closing it is the caller's,
   * after `dispose` or `suspend`.
   */
  readonly store?: Store;
  /**
   * Where the spans of runs, inferences, tool calls and pauses go (docs/protocol.md, Traces). Default
   * `trace.getTracer('stepwise')` of `@opentelemetry/api`, followed from the first run that starts
   * once an OpenTelemetry SDK is registered (until then it would be a no-op; register the SDK before
   * starting runs). `null`: no tracing at all.
   */
  readonly tracer?: Tracer | null;
  /**
   * Who runs a conversation (docs/protocol.md, Several instances): a run starts, and a fork is made,
   * once `claim` resolves true. Default: this process runs every conversation.
   */
  readonly ownership?: RunOwnership;
  /** Told about each frame the store could not commit (that frame reaches no client). Default: ignored. */
  readonly onFrameError?: (error: unknown) => void;
  /** How many requests sent to the model are kept for `inferences` (docs/protocol.md, What was sent to the model). */
  readonly inferenceLog?: InferenceLogConfig;
  /**
   * How long a pause keeps its run in memory (docs/protocol.md, Durability): older, the run leaves memory and is rebuilt
   * from its checkpoint when the pause resolves; nothing observable changes. Default 2 000 ms with a
   * durable store; off (Infinity) with a memory one, which keeps no checkpoint to rebuild from.
   */
  readonly hibernateAfterMs?: number;
}

/** A runtime: one event hub, one step controller, tools and sessions over one engine. */
export interface Stepwise {
  readonly hub: EventHub;
  /** The hub's frames once committed to the store: what clients get (docs/protocol.md, Durability). */
  readonly frames: FrameLog<LogFrame>;
  readonly controller: StepController;
  readonly registry: ToolRegistry;
  readonly sessions: SessionRegistry;
  readonly engine: Engine;
  readonly store: Store;
  /** Remembered approvals (docs/protocol.md, Grants), kept in the store's grants (shared by a service's instances). */
  readonly grants: GrantBook;
  /** What was sent to the model, per model message, as the engine received it (after every middleware). */
  readonly inferences: InferenceLog;
  /** Where conversations and their pauses are read: this process's, or the whole service's. */
  readonly directory: ConversationDirectory;
  /**
   * The command port (docs/protocol.md, Several instances): commands that steer a run reach the
   * process that owns it, where `handler` serves them. Called once, by the server.
   */
  commands(handler: CommandHandler): CommandPort;
  /**
   * Loads the store and brings back every conversation and unfinished run (docs/protocol.md, Durability): call it once,
   * before serving. Paused runs pause again with the same pause id and deadline.
   */
  recover(options?: RecoverOptions): Promise<RecoveryReport>;
  /**
   * One conversation's unfinished run brought back from the store exactly as `recover` would, on an
   * instance that took it over from a dead owner (docs/protocol.md, Several instances); its session here, if any, must be idle.
   */
  takeOver(convId: string, options?: RecoverOptions): Promise<RecoveryReport>;
  /**
   * Takes the conversation's run for this process before a run starts on it: false while another
   * instance of the service runs it (docs/protocol.md, Several instances). One process alone always may.
   */
  claim(convId: string): Promise<boolean>;
  /** A new conversation copied from another up to a turn or a pending pause (docs/protocol.md, Forks); see `forkConversation`. */
  fork(request: ForkRequest): Promise<ForkResult>;
  /** Cancels every run and drops every session. Idempotent. */
  dispose(): void;
  /**
   * Stops every run where it stands without ending it (SIGTERM with a durable store): nothing more is
   * published or stored, checkpoints and pauses stay for the next start, and it resolves once the
   * store has committed what was queued. After it the runtime is disposed.
   */
  suspend(): Promise<void>;
}

/**
 * Wires a runtime: the hub and the frames committed from it, the store and what writes to it, the
 * step controller, the tool loop, and the session registry that owns every session and its run.
 * Each piece is built in its own module; this only connects them.
 */
export function createStepwise(options: StepwiseConfig): Stepwise {
  const { config, inferences } = withInferenceLog(options);
  const scheduler = config.scheduler ?? asyncScheduler;
  const ids = config.ids ?? createRandomIds();
  // Keeping what the hub keeps: a store that persists nothing need not hold more than the replay buffer.
  const store = config.store ?? createMemoryStore({ maxFramesPerConversation: config.bufferSize ?? DEFAULT_BUFFER_SIZE });
  const readsNow = storeReadsNow(store);
  const hub = createEventHub({ ...(config.bufferSize === undefined ? {} : { bufferSize: config.bufferSize }), ...readsNow.hub });
  const writer = createStoreWriter(store, { engine: config.engine, scheduler });
  // Subscribed before anything else follows the hub, so every frame is appended as it is published.
  const frames = createFrameLog(hub, store, config.onFrameError === undefined ? {} : { onError: config.onFrameError });
  const tracing = createRuntimeTracing(hub.events$, config.tracer);
  const gate = createWriteGate();
  const publish = createGatedPublish(gate, writer, hub);
  // Late-bound to the controller and the registry built below: no pause hibernates before a session exists.
  const hibernation = wireHibernation(config, { store, hub, frames, scheduler, controller: () => core, sessionOf: (convId) => sessions.get(convId) });
  const hibernateAfterMs = hibernateAfterOf(config, store);
  const core = createRuntimeController(config, { scheduler, ids, publish, gate, writer, store, hibernate: hibernation.hibernate, hibernateAfterMs });
  const { toolsFor, engineFor } = createRunBuilders(config, scheduler);
  const { registry, executor } = toolsFor(config.tools ?? []);
  const engine = engineFor(config.engine);
  // Late-bound to the registry built below: neither is called before a session exists.
  const controller = withStoredSteps(core, { convOfSession: (sessionId) => sessions.convOfSession(sessionId), storeStep: (convId, step) => writer.step(convId, step) });
  // Late-bound to the registry below too: grants are consulted only once a run pauses.
  const grants = createGrantBook({ store: store.grants ?? createMemoryGrants(), scheduler, ids, targetOf: (convId) => grantTargetOf(sessions.get(convId)) });
  const ports: LoopPorts = { engine, registry, executor, controller, publish, scheduler, ids, grants };
  const loop = createStoredLoop(ports, config, { gate, writer, store, profileOf: (convId) => sessions.get(convId)?.profile });
  const restoreEngine = (convId: string, state: JsonValue, choices: SessionChoices | undefined): void => (choices?.engine ?? config.engine).restore?.(convId, state);
  const settings = { loop, views: { hub, controller }, toolsFor, engineFor, ...(config.systemPrompt === undefined ? {} : { systemPrompt: config.systemPrompt }), ...readsNow.sessions };
  const retention = config.retention === undefined ? {} : { retention: config.retention };
  const sessions = createSessionRegistry({ loop: ports, settings, hub, frames, store, writer, gate, controller, core, restoreEngine, onRunStarting: () => tracing.runStarting(), ...retention });
  const service = serviceOf(config, store);
  const claim = (convId: string): Promise<boolean> => service.ownership.claim(convId);
  const local: Stepwise = {
    hub,
    frames,
    controller,
    registry,
    sessions,
    engine,
    store,
    grants,
    inferences,
    directory: createLocalDirectory({ sessions, controller, frames }),
    commands: (handler) => createLocalCommands(handler, (pauseId) => controller.convOf(pauseId)),
    claim,
    ...recoveryAndForks(store, {
      loop: ports,
      sessions,
      controller,
      hub,
      claim,
      restoreEngine,
      unrestored: createUnrestoredWrites(gate, writer, store),
      ...(hibernateAfterMs === undefined ? {} : { sleep: hibernation.restoreAsleep }),
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

/** `recover`, `takeOver` and `fork`: runs brought back from the store, or copied from it. */
function recoveryAndForks(
  store: Store,
  ports: Pick<ForkPorts, 'claim' | 'restoreEngine'> & Pick<RestorePorts, 'sleep' | 'unrestored'> & {
    readonly loop: LoopPorts;
    readonly sessions: ReturnType<typeof createSessionRegistry>;
    readonly controller: ReturnType<typeof withStoredSteps>;
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
    ...(ports.sleep ? { sleep: ports.sleep } : {}),
  };
  const open: ForkPorts['open'] = (identity, choices) => sessions.open({ ...identity, ...choices });
  const forkPorts: ForkPorts = { loop, controller, store, claim: ports.claim, open, restoreEngine: ports.restoreEngine };
  return {
    recover: async (options) => restoreSnapshot(await store.load(), restorePorts, options),
    takeOver: (convId, options) => takeOverConversation(store, convId, restorePorts, options),
    fork: (request) => forkConversation(forkPorts, request),
  };
}
