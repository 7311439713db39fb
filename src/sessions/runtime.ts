import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { createRandomIds, type IdSource } from '../core/ids.js';
import { withMiddlewares, type Engine, type EngineMiddleware } from '../core/engine.js';
import type { LoopPorts } from '../operators/loop-state.js';
import { toolLoop } from '../operators/tool-loop.js';
import type { SnapshotHook } from '../operators/snapshot-hook.js';
import { createEventHub, type EventHub } from '../streams/event-hub.js';
import { createStepController, type StepController, type TimeoutAction } from '../streams/step-controller.js';
import type { Tool, ToolDefinition, ToolErrorPolicy } from '../tools/define-tool.js';
import { createToolExecutor } from '../tools/tool-executor.js';
import { createToolRegistry, type ToolRegistry } from '../tools/tool-registry.js';
import { createSession, type Session } from './session.js';

export interface StepwiseConfig {
  readonly engine: Engine;
  /** `[A, B, C]`: A wraps B wraps C wraps the engine. Default none. */
  readonly middlewares?: readonly EngineMiddleware[];
  readonly tools?: readonly (Tool | ToolDefinition)[];
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
}

export interface OpenSessionOptions {
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
  const registry = createToolRegistry(config.tools ?? []);
  const executor = createToolExecutor(
    registry,
    {
      ...(config.toolTimeoutMs === undefined ? {} : { timeoutMs: config.toolTimeoutMs }),
      ...(config.toolPolicy === undefined ? {} : { policy: config.toolPolicy }),
      ...(config.toolMaxRetries === undefined ? {} : { maxRetries: config.toolMaxRetries }),
      ...(config.toolRetryBaseDelayMs === undefined ? {} : { retryBaseDelayMs: config.toolRetryBaseDelayMs }),
    },
    scheduler,
  );
  const engine = withMiddlewares(config.engine, config.middlewares ?? []);
  const ports: LoopPorts = { engine, registry, executor, controller, publish, scheduler, ids };
  // One loop for every run: its operators keep their state inside each subscription.
  const loop = toolLoop(ports, {
    ...(config.maxIterations === undefined ? {} : { maxIterations: config.maxIterations }),
    ...(config.maxParallelTools === undefined ? {} : { maxParallelTools: config.maxParallelTools }),
    ...(config.onSnapshot === undefined ? {} : { onSnapshot: config.onSnapshot }),
  });
  const settings = { loop, ...(config.systemPrompt === undefined ? {} : { systemPrompt: config.systemPrompt }) };

  const sessions = new Map<string, Session>();
  let disposed = false;
  const close = (convId: string): boolean => {
    const session = sessions.get(convId);
    if (!session) return false;
    session.dispose();
    controller.disable(session.session_id);
    sessions.delete(convId);
    hub.forget(convId);
    engine.forget?.(convId);
    return true;
  };
  const registryOfSessions: SessionRegistry = {
    open: ({ conv_id, owner } = {}) => {
      if (disposed) throw new Error('this stepwise runtime was disposed');
      const existing = conv_id === undefined ? undefined : sessions.get(conv_id);
      if (existing) return existing;
      const identity = {
        conv_id: conv_id ?? ids.next('conv'),
        session_id: ids.next('sess'),
        created_at: scheduler.now(),
        ...(owner === undefined ? {} : { owner }),
      };
      const session = createSession(ports, identity, settings);
      sessions.set(identity.conv_id, session);
      return session;
    },
    get: (convId) => sessions.get(convId),
    list: () => [...sessions.values()],
    close,
    dispose: () => {
      for (const convId of [...sessions.keys()]) close(convId);
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
