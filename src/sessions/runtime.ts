import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { createRandomIds, type IdSource } from '../core/ids.js';
import { withMiddlewares, type Engine, type EngineMiddleware } from '../core/engine.js';
import type { LoopPorts, RunTools } from '../operators/loop-state.js';
import { toolLoop } from '../operators/tool-loop.js';
import type { SnapshotHook } from '../operators/snapshot-hook.js';
import { createEventHub, type EventHub } from '../streams/event-hub.js';
import { createStepController, type StepController, type TimeoutAction } from '../streams/step-controller.js';
import type { ToolErrorPolicy } from '../tools/define-tool.js';
import { createToolExecutor } from '../tools/tool-executor.js';
import { createToolRegistry, type ToolRegistry } from '../tools/tool-registry.js';
import { createRetention, type RetentionConfig } from './retention.js';
import { createSession, type Session, type SessionChoices, type SessionSettings, type ToolList } from './session.js';

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
   * server's memory stays bounded; past that the longest idle ones go first. See {@link RetentionConfig}.
   */
  readonly retention?: RetentionConfig;
}

/** Options for a new session; they apply only when `open` creates it (see `Session.configure`). */
export interface OpenSessionOptions extends SessionChoices {
  readonly conv_id?: string;
  readonly owner?: string;
}

/** The owner of every session: holds them and disposes them. */
export interface SessionRegistry {
  /** Returns the conversation's session, creating it (and the conversation) when new. */
  open(options?: OpenSessionOptions): Session;
  get(convId: string): Session | undefined;
  list(): Session[];
  /** Cancels the conversation's run, switches its step mode off and drops it and its buffered events. */
  close(convId: string): boolean;
  /** Cancels every run and closes every session. */
  dispose(): void;
}

/** A runtime: one event hub, one step controller, tools and sessions over one engine. */
export interface Stepwise {
  readonly hub: EventHub;
  readonly controller: StepController;
  readonly registry: ToolRegistry;
  readonly sessions: SessionRegistry;
  readonly engine: Engine;
  /** Cancels every run and drops every session. Idempotent. */
  dispose(): void;
}

export function createStepwise(config: StepwiseConfig): Stepwise {
  const scheduler = config.scheduler ?? asyncScheduler;
  const ids = config.ids ?? createRandomIds();
  const hub = createEventHub(config.bufferSize === undefined ? {} : { bufferSize: config.bufferSize });
  const publish = hub.publish;
  const controller = createStepController(
    { scheduler, ids, publish },
    {
      ...(config.pauseTimeoutMs === undefined ? {} : { pauseTimeoutMs: config.pauseTimeoutMs }),
      ...(config.timeoutAction === undefined ? {} : { timeoutAction: config.timeoutAction }),
    },
  );
  const executorConfig = {
    ...(config.toolTimeoutMs === undefined ? {} : { timeoutMs: config.toolTimeoutMs }),
    ...(config.toolPolicy === undefined ? {} : { policy: config.toolPolicy }),
    ...(config.toolMaxRetries === undefined ? {} : { maxRetries: config.toolMaxRetries }),
    ...(config.toolRetryBaseDelayMs === undefined ? {} : { retryBaseDelayMs: config.toolRetryBaseDelayMs }),
  };
  // The same settings for the runtime's tools and for a session's or run's own.
  const toolsFor = (tools: ToolList): RunTools => {
    const toolRegistry = createToolRegistry(tools);
    return { registry: toolRegistry, executor: createToolExecutor(toolRegistry, executorConfig, scheduler) };
  };
  const engineFor = (engine: Engine): Engine => withMiddlewares(engine, config.middlewares ?? []);
  const { registry, executor } = toolsFor(config.tools ?? []);
  const engine = engineFor(config.engine);
  const ports: LoopPorts = { engine, registry, executor, controller, publish, scheduler, ids };
  // One loop for every run: its operators keep their state inside each subscription.
  const loop = toolLoop(ports, {
    ...(config.maxIterations === undefined ? {} : { maxIterations: config.maxIterations }),
    ...(config.maxParallelTools === undefined ? {} : { maxParallelTools: config.maxParallelTools }),
    ...(config.onSnapshot === undefined ? {} : { onSnapshot: config.onSnapshot }),
  });

  const sessions = new Map<string, Session>();
  let disposed = false;
  const close = (convId: string): boolean => {
    const session = sessions.get(convId);
    if (!session) return false;
    // Out of the map first: a run ended by this close reports activity for a session already gone.
    sessions.delete(convId);
    retention.forget(convId);
    session.dispose();
    controller.disable(session.session_id);
    hub.forget(convId);
    engine.forget?.(convId);
    return true;
  };
  const retention = createRetention({ scheduler, close, isWatched: hub.isWatched }, config.retention);
  const settings: SessionSettings = {
    loop,
    views: { hub, controller },
    toolsFor,
    engineFor,
    onActivity: (session) => {
      if (sessions.get(session.conv_id) !== session) return;
      retention.observe(session.conv_id, session.running);
      if (!session.running) retention.makeRoom(sessions.size);
    },
    ...(config.systemPrompt === undefined ? {} : { systemPrompt: config.systemPrompt }),
  };
  const registryOfSessions: SessionRegistry = {
    open: ({ conv_id, owner, ...choices } = {}) => {
      if (disposed) throw new Error('this stepwise runtime was disposed');
      const existing = conv_id === undefined ? undefined : sessions.get(conv_id);
      if (existing) return existing;
      const identity = {
        conv_id: conv_id ?? ids.next('conv'),
        session_id: ids.next('sess'),
        created_at: scheduler.now(),
        ...(owner === undefined ? {} : { owner }),
      };
      const session = createSession(ports, identity, settings, choices);
      // Room is made before the new session counts, so it is never the one evicted.
      retention.makeRoom(sessions.size + 1);
      sessions.set(identity.conv_id, session);
      retention.observe(identity.conv_id, false);
      return session;
    },
    get: (convId) => sessions.get(convId),
    list: () => [...sessions.values()],
    close,
    dispose: () => {
      for (const convId of [...sessions.keys()]) close(convId);
      retention.dispose();
    },
  };

  return {
    hub,
    controller,
    registry,
    sessions: registryOfSessions,
    engine,
    dispose: () => {
      if (disposed) return;
      disposed = true;
      registryOfSessions.dispose();
    },
  };
}
