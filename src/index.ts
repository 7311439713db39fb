// stepwise: a steppable LLM tool-calling loop on RxJS. The public API, re-exported by name.
export { createRandomIds, createSequentialIds, type IdSource } from './core/ids.js';
export { fromAbortable } from './core/abortable.js';
export {
  pendingToolCalls,
  type Block,
  type BlockKind,
  type LlmTextBlock,
  type ReasoningBlock,
  type SystemBlock,
  type ToolCall,
  type ToolCallBlock,
  type ToolUseBlock,
  type Turn,
  type UserBlock,
} from './core/turns.js';
export {
  EngineError,
  withMiddlewares,
  type Engine,
  type EngineEvent,
  type EngineMiddleware,
  type InferenceRequest,
  type JsonSchema,
  type ToolChoice,
  type ToolSpec,
  type Usage,
} from './core/engine.js';
export { logging, reorderToolResults, systemPrompt } from './engines/middlewares.js';
export { chunkText, createScriptedEngine, parseScript, type Script, type ScriptedEngineConfig, type ScriptedResponse } from './engines/scripted.js';
export * from './operators/index.js';
export { createEventHub, type BufferedFrames, type EventHub, type EventHubConfig } from './streams/event-hub.js';
export {
  createEvent,
  type EventOrigin,
  type LogLevel,
  type PauseInfo,
  type PausePhase,
  type PauseToolCall,
  type ResumeReason,
  type RunStatus,
  type SequencedEvent,
  type StepwiseEvent,
  type StepwiseEventType,
} from './streams/events.js';
export {
  StepCommandError,
  type ContinueCommand,
  type PauseDecision,
  type PauseResolution,
  type StepErrorCode,
  type ResultEdit,
  type SubmitResult,
} from './streams/step-commands.js';
export {
  createStepController,
  type PauseRequest,
  type StepController,
  type StepControllerConfig,
  type TimeoutAction,
} from './streams/step-controller.js';
export { defineTool, type AgentSpec, type Breakpoint, type BreakpointContext, type HumanAnswer, type Tool, type ToolContext, type ToolDefinition, type ToolErrorPolicy } from './tools/define-tool.js';
export { defineHumanTool, UNANSWERED, type HumanToolDefinition } from './tools/define-human-tool.js';
export { defineAgentTool, type AgentToolDefinition } from './tools/define-agent-tool.js';
export { toTool, type HumanToolEntry } from './tools/to-tool.js';
export { createToolExecutor, ToolTimeoutError, type ToolExecutor, type ToolExecutorConfig, type ToolOutcome } from './tools/tool-executor.js';
export { createToolRegistry, type ToolRegistry } from './tools/tool-registry.js';
export {
  RunInProgressError,
  SessionClosedError,
  SessionStartedError,
  UnknownToolsError,
  type RunHandle,
  type RunOverrides,
  type RunResult,
  type Session,
  type SessionChoices,
  type StartRunInput,
  type ToolList,
} from './sessions/session.js';
export { finalTextOf } from './sessions/run-handle.js';
export { answerWith, continueWith, denyWith, editCall, editResults, editWith, type ArgsOf, type PauseRef, type ToolEdit } from './sessions/typed-decisions.js';
export { DEFAULT_RETENTION, type RetentionConfig } from './sessions/retention.js';
export { createStepwise, type OpenSessionOptions, type SessionRegistry, type Stepwise, type StepwiseConfig } from './sessions/runtime.js';
export { INTERRUPTED, type RecoverOptions, type RecoveryReport } from './sessions/recovery.js';
export type { UnrestoredRun } from './sessions/unrestored.js';
export { ForkError, type ForkErrorCode, type ForkRequest, type ForkResult } from './sessions/fork.js';
export { createMemoryStore, createSqliteStore, type MemoryStoreOptions, type SqliteStoreOptions } from './store/index.js';
export { createRedisStore, type RedisStoreOptions } from './service/service-store.js';
export type { RedisStore } from './store/redis/redis-store.js';
export type { FrameEvent, Store, StoreRetentionConfig } from './core/store.js';
export {
  StoreClosedError,
  StoreError,
  StoreLockedError,
  StoreUnavailableError,
  StoreUnreadableError,
  StoredRowError,
  type StoreErrorCode,
} from './core/store-errors.js';
export { createStepwiseServer } from './server/lazy-server.js';
export type { AttachOptions, StepwiseServer, StepwiseServerOptions } from './server/stepwise-server.js';
export type { Profile } from './server/profiles.js';
export { isValidSignature } from './server/webhooks/signing.js';
export type { Webhook, WebhookEvent, WebhooksConfig } from './server/webhooks/webhooks-config.js';
export type { TokenTable } from './server/auth.js';
export type { ConversationDirectory, ConversationSummary, ConversationView, ListedPause } from './core/directory.js';
export type { CancelCommand, Command, CommandFailure, CommandHandler, CommandPort, CommandRequest, CommandResult, CommandValues, DecideCommand, StepModeCommand } from './core/commands.js';
export type { BoundaryHook } from './operators/tool-loop.js';
export { createOpenAIChatEngine, OPENAI_CHAT_DEFAULTS, type OpenAIChatEngineConfig } from './engines/openai-chat.js';
export { createOpenAIResponsesEngine, OPENAI_RESPONSES_DEFAULTS, type OpenAIResponsesEngineConfig } from './engines/openai-responses.js';
export { createAnthropicEngine, ANTHROPIC_DEFAULTS, type AnthropicEngineConfig } from './engines/anthropic.js';
export {
  selectEngine,
  ENGINE_CHOICES,
  LOCAL_SERVER_API_KEY,
  type EngineChoice,
  type EngineSelection,
  type SelectEngineConfig,
} from './engines/select-engine.js';
export { connectMcpServers, mcpToolsOf, parseMcpConfig, toMcpTool, type McpConfig, type McpServerDown, type McpServers, type McpServersConfig, type McpServerSpec } from './mcp/index.js';
export { traceRuns, exportTracesFromEnv, type TraceExport } from './telemetry/index.js';
