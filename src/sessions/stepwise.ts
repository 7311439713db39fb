import type { Tracer } from '@opentelemetry/api';
import type { SchedulerLike } from 'rxjs';
import type { CommandHandler, CommandPort } from '../core/commands.js';
import type { ConversationDirectory } from '../core/directory.js';
import type { Engine, EngineMiddleware } from '../core/engine.js';
import type { IdSource } from '../core/ids.js';
import type { RunOwnership } from '../core/ownership.js';
import type { Store } from '../core/store.js';
import type { SnapshotHook } from '../operators/snapshot-hook.js';
import type { EventHub } from '../streams/event-hub.js';
import type { LogFrame } from '../streams/frame-codec.js';
import type { FrameLog } from '../streams/frame-log.js';
import type { StepController, TimeoutAction } from '../streams/step-controller.js';
import type { ToolErrorPolicy } from '../tools/define-tool.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { ForkRequest, ForkResult } from './fork.js';
import type { GrantBook } from './grant-book.js';
import type { InferenceLog, InferenceLogConfig } from './inference-log.js';
import type { RecoverOptions, RecoveryReport } from './recovery.js';
import type { SessionRegistry } from './registry.js';
import type { RetentionConfig } from './retention.js';
import type { ToolList } from './session.js';

/** What a runtime is made with and what it is: `createStepwise` (./runtime.ts) wires one. */

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
  /** How deep agents inside agents may go (docs/protocol.md, Agents inside agents): `--max-agent-depth`. Default 4. */
  readonly maxAgentDepth?: number;
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
   * instance that took it over from one that stopped (docs/protocol.md, Several instances); its session here, if any, must be idle.
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

