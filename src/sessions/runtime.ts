import type { Tracer } from '@opentelemetry/api';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { createRandomIds, type IdSource } from '../core/ids.js';
import { SOLE_OWNERSHIP, type RunOwnership } from '../core/ownership.js';
import { withMiddlewares, type Engine, type EngineMiddleware } from '../core/engine.js';
import { registryOf, type LoopPorts, type RunTools } from '../operators/loop-state.js';
import { toolLoop } from '../operators/tool-loop.js';
import type { SnapshotHook } from '../operators/snapshot-hook.js';
import { createEventHub, DEFAULT_BUFFER_SIZE, type EventHub } from '../streams/event-hub.js';
import { createFrameLog, type FrameLog } from '../streams/frame-log.js';
import type { LogFrame } from '../streams/frame-codec.js';
import { createStepController, type StepController, type TimeoutAction } from '../streams/step-controller.js';
import { withStoredSteps } from '../streams/stored-step-controller.js';
import type { ForkOrigin, Store, StoredConversation, StoreSnapshot } from '../core/store.js';
import { createMemoryStore } from '../store/memory.js';
import type { ToolErrorPolicy } from '../tools/define-tool.js';
import { createToolExecutor } from '../tools/tool-executor.js';
import { createToolRegistry, type ToolRegistry } from '../tools/tool-registry.js';
import { createRuntimeTracing } from '../telemetry/runtime-tracing.js';
import { forkConversation, type ForkRequest, type ForkResult } from './fork.js';
import { createRetention, type RetentionConfig } from './retention.js';
import { loadConversation, recoverFrom, type RecoverOptions, type RecoveryReport } from './recovery.js';
import { createSession, type Session, type SessionChoices, type SessionSettings, type ToolList } from './session.js';
import { createStoreWriter, hasUnrepeatableCall } from './store-writer.js';

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
}

/** Options for a new session; they apply only when `open` creates it (see `Session.configure`). */
export interface OpenSessionOptions extends SessionChoices {
  readonly conv_id?: string;
  readonly owner?: string;
  readonly forked_from?: ForkOrigin;
}

/** The owner of every session: holds them and disposes them. */
export interface SessionRegistry {
  /** Returns the conversation's session, creating it (and the conversation) when new. */
  open(options?: OpenSessionOptions): Session;
  get(convId: string): Session | undefined;
  list(): Session[];
  /** Cancels the conversation's run, switches its step mode off and drops it and its buffered events. */
  close(convId: string): boolean;
  /**
   * A conversation another instance created (docs/protocol.md, Several instances), as this one's session without a run: same ids,
   * turns and owner; seq goes on from its stored log. A session already here is returned, brought up
   * to date (turns, engine state, step mode) unless it is running: another instance may have run it since.
   */
  adopt(conversation: StoredConversation): Session;
  /**
   * Another instance owns the conversation's run now (its lease lapsed here, docs/protocol.md, Several instances): the run stops
   * where it stands, publishing and storing nothing more, and the session is dropped. False if none.
   */
  relinquish(convId: string): boolean;
  /** Cancels every run and closes every session. */
  dispose(): void;
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

/** How long after a conversation was adopted `open` adopts it again rather than creating it, ms. */
const REJOIN_WITHIN_MS = 10_000;
/** How many recent adoptions are remembered for that. */
const REJOIN_MEMORY = 1000;

export function createStepwise(config: StepwiseConfig): Stepwise {
  const scheduler = config.scheduler ?? asyncScheduler;
  const ids = config.ids ?? createRandomIds();
  const hub = createEventHub(config.bufferSize === undefined ? {} : { bufferSize: config.bufferSize });
  // Keeping what the hub keeps: a store that persists nothing need not hold more than the replay buffer.
  const store = config.store ?? createMemoryStore({ maxFramesPerConversation: config.bufferSize ?? DEFAULT_BUFFER_SIZE });
  const writer = createStoreWriter(store, { engine: config.engine, scheduler });
  const ownership = config.ownership ?? SOLE_OWNERSHIP;
  // Subscribed before anything else follows the hub, so every frame is appended as it is published.
  const frames = createFrameLog(hub, store, config.onFrameError === undefined ? {} : { onError: config.onFrameError });
  const tracing = createRuntimeTracing(hub.events$, config.tracer);
  // False once suspended: a run stopped for the next start publishes and stores nothing on its way down.
  let live = true;
  // Conversations whose run another instance took over (docs/protocol.md, Several instances): what is left of it here is silent.
  const fenced = new Set<string>();
  const writes = (convId: string): boolean => live && (fenced.size === 0 || !fenced.has(convId));
  const publish = (event: Parameters<EventHub['publish']>[0]): void => {
    if (!writes(event.conv_id)) return;
    writer.published(event);
    hub.publish(event);
  };
  const core = createStepController(
    { scheduler, ids, publish, onResolved: (resolution) => writes(resolution.pause.conv_id) && writer.resolved(resolution) },
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
  const sessions = new Map<string, Session>();
  // By session id, for step mode changes: a scan of every session made enabling step mode on 10 000
  // sessions quadratic (19 s to pause `paused_heap_per_run`'s runs, so their deadlines passed first).
  const convBySession = new Map<string, string>();
  const convOfSession = (sessionId: string): string | undefined => convBySession.get(sessionId);
  const controller = withStoredSteps(core, { convOfSession, storeStep: (convId, step) => writer.step(convId, step) });
  const stepOf = controller.stepOf;
  const ports: LoopPorts = { engine, registry, executor, controller, publish, scheduler, ids };
  // One loop for every run: its operators keep their state inside each subscription.
  const loop = toolLoop(ports, {
    ...(config.maxIterations === undefined ? {} : { maxIterations: config.maxIterations }),
    ...(config.maxParallelTools === undefined ? {} : { maxParallelTools: config.maxParallelTools }),
    ...(config.onSnapshot === undefined ? {} : { onSnapshot: config.onSnapshot }),
    onBoundary: (state, next, pending) => {
      if (!writes(state.run.conv_id)) return undefined;
      writer.boundary(state, next, sessions.get(state.run.conv_id)?.profile, pending);
      // A call that must not run twice is recorded as started (this checkpoint) before it starts.
      return next === 'tools' && store.durable && hasUnrepeatableCall(registryOf(ports, state.run), state, pending) ? store.committed$(state.run.conv_id) : undefined;
    },
  });

  let disposed = false;
  const close = (convId: string): boolean => {
    const session = sessions.get(convId);
    if (!session) return false;
    // Out of the map first: a run ended by this close reports activity for a session already gone.
    sessions.delete(convId);
    convBySession.delete(session.session_id);
    retention.forget(convId);
    session.dispose();
    controller.disable(session.session_id);
    const lastSeq = hub.lastSeq(convId);
    hub.forget(convId);
    frames.forget(convId);
    // A durable store keeps the conversation's log, which a session opened again under this id goes
    // on from (seq is never reused); a memory store drops it with the session, as the hub does.
    if (store.durable) hub.seed(convId, lastSeq);
    else store.deleteConversation(convId);
    engine.forget?.(convId);
    return true;
  };
  const retention = createRetention({ scheduler, close, isWatched: (convId) => hub.isWatched(convId) || frames.isWatched(convId) }, config.retention);
  const settings: SessionSettings = {
    loop,
    views: { hub, controller },
    toolsFor,
    engineFor,
    onActivity: (session) => {
      if (session.running) tracing.runStarting();
      if (sessions.get(session.conv_id) !== session) return;
      // At a run's start: its profile may have been chosen after the session opened.
      if (session.running && writes(session.conv_id)) writer.conversation(session, stepOf(session.session_id));
      retention.observe(session.conv_id, session.running);
      if (!session.running) retention.makeRoom(sessions.size);
    },
    onRunEnded: (session, result) => {
      if (writes(session.conv_id)) writer.runEnded(session, result);
    },
    ...(config.systemPrompt === undefined ? {} : { systemPrompt: config.systemPrompt }),
  };
  /** Adds a session to the registry (room made first, so it is never the one evicted). */
  const admit = (session: Session): Session => {
    fenced.delete(session.conv_id);
    retention.makeRoom(sessions.size + 1);
    sessions.set(session.conv_id, session);
    convBySession.set(session.session_id, session.conv_id);
    retention.observe(session.conv_id, false);
    return session;
  };
  /** A stored conversation's session as it was: same ids, owner, profile, step mode and engine state. */
  const reopen = (conversation: StoredConversation, choices: SessionChoices | undefined): Session => {
    const { conv_id, session_id, created_at, owner, profile, forked_from } = conversation;
    const identity = { conv_id, session_id, created_at, ...(owner === undefined ? {} : { owner }), ...(forked_from === undefined ? {} : { forked_from }) };
    const session = createSession(ports, identity, settings, { ...choices, ...(profile === undefined ? {} : { profile }) });
    applyStored(session_id, conversation, choices);
    return admit(session);
  };
  /** A stored conversation's step mode and engine state, on its session here. */
  const applyStored = (sessionId: string, conversation: StoredConversation, choices: SessionChoices | undefined): void => {
    if (conversation.step.enabled) core.enable(sessionId, conversation.step.filter);
    // Only when on: `disable` looks through the pending pauses, and a restart opens thousands of sessions.
    else if (core.isEnabled(sessionId)) core.disable(sessionId);
    if (conversation.engine_state !== undefined) (choices?.engine ?? config.engine).restore?.(conversation.conv_id, conversation.engine_state);
  };
  /** Recovery's reopen: an idle session already here (adopted from another instance) is brought up to date. */
  const reopenOrRefresh = (conversation: StoredConversation, choices: SessionChoices | undefined): Session => {
    const existing = sessions.get(conversation.conv_id);
    if (!existing) return reopen(conversation, choices);
    applyStored(existing.session_id, conversation, choices);
    return existing;
  };
  /** Brings back what a snapshot holds (all of a store at a restart, one conversation at a takeover). */
  const restore = async (snapshot: StoreSnapshot, options: RecoverOptions = {}): Promise<RecoveryReport> => {
    // seq goes on from the stored log (docs/protocol.md, Durability), set before recovery publishes anything.
    for (const { conv_id, last_seq } of snapshot.conversations) if (last_seq > hub.lastSeq(conv_id)) hub.seed(conv_id, last_seq);
    const claimed = options.claim ? await options.claim(snapshot.checkpoints.map((checkpoint) => checkpoint.conv_id)) : undefined;
    const recoveryPorts = { loop: ports, reopen: reopenOrRefresh, expectPause: controller.expect };
    return recoverFrom(snapshot, recoveryPorts, options, claimed ? (convId) => claimed.has(convId) : undefined);
  };
  // The conversations adopted lately (docs/protocol.md, Several instances), newest last: `open` right after a join finds its own.
  const joined = new Map<string, { readonly conversation: StoredConversation; readonly at: number }>();
  const registryOfSessions: SessionRegistry = {
    open: ({ conv_id, owner, forked_from, ...choices } = {}) => {
      if (disposed) throw new Error('this stepwise runtime was disposed');
      const existing = conv_id === undefined ? undefined : sessions.get(conv_id);
      if (existing) return existing;
      // Adopted a moment ago and closed since (retention, with more busy sessions than it keeps):
      // adopted again, never created anew over the stored conversation of another instance.
      const adopted = conv_id === undefined ? undefined : joined.get(conv_id);
      if (adopted && scheduler.now() - adopted.at <= REJOIN_WITHIN_MS) return registryOfSessions.adopt(adopted.conversation);
      const identity = {
        conv_id: conv_id ?? ids.next('conv'),
        session_id: ids.next('sess'),
        created_at: scheduler.now(),
        ...(owner === undefined ? {} : { owner }),
        ...(forked_from === undefined ? {} : { forked_from }),
      };
      const session = admit(createSession(ports, identity, settings, choices));
      writer.conversation(session, stepOf(session.session_id));
      return session;
    },
    get: (convId) => sessions.get(convId),
    adopt: (conversation) => {
      joined.delete(conversation.conv_id);
      joined.set(conversation.conv_id, { conversation, at: scheduler.now() });
      if (joined.size > REJOIN_MEMORY) joined.delete(joined.keys().next().value as string);
      if (conversation.last_seq > hub.lastSeq(conversation.conv_id)) hub.seed(conversation.conv_id, conversation.last_seq);
      const existing = sessions.get(conversation.conv_id);
      if (existing?.running) return existing;
      // An idle session here is brought up to date: another instance may have run the conversation since.
      const session = reopenOrRefresh(conversation, undefined);
      session.restoreTurns(conversation.turns);
      return session;
    },
    list: () => [...sessions.values()],
    close,
    relinquish: (convId) => {
      const session = sessions.get(convId);
      if (!session) return false;
      fenced.add(convId);
      session.suspend();
      close(convId);
      return true;
    },
    dispose: () => {
      for (const convId of [...sessions.keys()]) close(convId);
      retention.dispose();
    },
  };

  return {
    hub,
    frames,
    controller,
    registry,
    sessions: registryOfSessions,
    engine,
    store,
    claim: (convId) => ownership.claim(convId),
    recover: async (options) => restore(await store.load(), options),
    takeOver: async (convId, options) => {
      const snapshot = await loadConversation(store, convId);
      return snapshot ? restore(snapshot, options) : { conversations: 0, runs: 0, pauses: 0 };
    },
    fork: (request) =>
      forkConversation(
        {
          loop: ports,
          controller,
          store,
          claim: (convId) => ownership.claim(convId),
          open: (identity, choices) => registryOfSessions.open({ ...identity, ...choices }),
          restoreEngine: (convId, state, choices) => (choices?.engine ?? config.engine).restore?.(convId, state),
        },
        request,
      ),
    dispose: () => {
      if (disposed) return;
      disposed = true;
      registryOfSessions.dispose();
      tracing.unsubscribe();
      frames.dispose();
    },
    suspend: async () => {
      if (!disposed) {
        disposed = true;
        live = false;
        for (const session of sessions.values()) session.suspend();
        retention.dispose();
        tracing.unsubscribe();
      }
      await store.flush();
      frames.dispose();
    },
  };
}
