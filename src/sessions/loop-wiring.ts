import type { OperatorFunction, SchedulerLike } from 'rxjs';
import { withMiddlewares, type Engine } from '../core/engine.js';
import type { Store } from '../core/store.js';
import { registryOf, type LoopPorts, type LoopState, type RunTools } from '../operators/loop-state.js';
import { toolLoop } from '../operators/tool-loop.js';
import { createToolExecutor, type ToolExecutorConfig } from '../tools/tool-executor.js';
import { createToolRegistry } from '../tools/tool-registry.js';
import type { StepwiseConfig } from './stepwise.js';
import type { ToolList } from './session.js';
import { hasUnrepeatableCall, type StoreWriter } from './store-writer.js';
import type { WriteGate } from './write-gate.js';

/** How the runtime builds the tools and engine of a run: its own, a session's or a run's, with the same settings. */
export interface RunBuilders {
  /** A registry and executor for these tools, with the runtime's executor settings. */
  readonly toolsFor: (tools: ToolList) => RunTools;
  /** This engine wrapped by the runtime's middlewares. */
  readonly engineFor: (engine: Engine) => Engine;
}

export function createRunBuilders(config: StepwiseConfig, scheduler: SchedulerLike): RunBuilders {
  const executorConfig: ToolExecutorConfig = {
    ...(config.toolTimeoutMs === undefined ? {} : { timeoutMs: config.toolTimeoutMs }),
    ...(config.toolPolicy === undefined ? {} : { policy: config.toolPolicy }),
    ...(config.toolMaxRetries === undefined ? {} : { maxRetries: config.toolMaxRetries }),
    ...(config.toolRetryBaseDelayMs === undefined ? {} : { retryBaseDelayMs: config.toolRetryBaseDelayMs }),
  };
  return {
    toolsFor: (tools) => {
      const registry = createToolRegistry(tools);
      return { registry, executor: createToolExecutor(registry, executorConfig, scheduler) };
    },
    engineFor: (engine) => withMiddlewares(engine, config.middlewares ?? []),
  };
}

/** What the loop's boundaries write through. */
export interface StoredLoopPorts {
  readonly gate: WriteGate;
  readonly writer: StoreWriter;
  readonly store: Store;
  /** The profile of the conversation's session, stored with each checkpoint. */
  readonly profileOf: (convId: string) => string | undefined;
}

/**
 * The runtime's one tool loop, shared by every run (its operators keep their state inside each
 * subscription), storing a checkpoint at every phase boundary (docs/protocol.md, Durability).
 */
export function createStoredLoop(ports: LoopPorts, config: StepwiseConfig, stored: StoredLoopPorts): OperatorFunction<LoopState, LoopState> {
  const { gate, writer, store } = stored;
  return toolLoop(ports, {
    ...(config.maxIterations === undefined ? {} : { maxIterations: config.maxIterations }),
    ...(config.maxParallelTools === undefined ? {} : { maxParallelTools: config.maxParallelTools }),
    ...(config.maxAgentDepth === undefined ? {} : { maxAgentDepth: config.maxAgentDepth }),
    ...(config.onSnapshot === undefined ? {} : { onSnapshot: config.onSnapshot }),
    onBoundary: (state, next, pending) => {
      // A child run (docs/protocol.md, Agents inside agents) keeps no checkpoint of its own yet: after a restart its
      // parent's agent call is answered as any call that was running then.
      if (state.run.depth !== undefined || !gate.writes(state.run.conv_id)) return undefined;
      writer.boundary(state, next, stored.profileOf(state.run.conv_id), pending);
      // A call that must not run twice is recorded as started (this checkpoint) before it starts.
      return next === 'tools' && store.durable && hasUnrepeatableCall(registryOf(ports, state.run), state, pending) ? store.committed$(state.run.conv_id) : undefined;
    },
  });
}
