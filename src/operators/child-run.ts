import { Observable } from 'rxjs';
import type { Block, ToolCall } from '../core/turns.js';
import { eventFrom, type RunStatus } from '../streams/events.js';
import type { AgentSpec, Tool } from '../tools/define-tool.js';
import { createToolExecutor, type ChildRuns } from '../tools/tool-executor.js';
import { createToolRegistry, type ToolRegistry } from '../tools/tool-registry.js';
import { createLoopState, registryOf, type LoopPorts, type LoopState, type RunContext, type RunTools } from './loop-state.js';

/** How many levels of agents inside agents run at most, unless the loop is told otherwise. */
export const DEFAULT_MAX_AGENT_DEPTH = 4;

/**
 * The child runs of one parent run's agent calls (docs/protocol.md, Agents inside agents): each call's child is a
 * run of the same loop (`loop`: a state through to the run's end), an Observable inside the parent's tools phase, so
 * composition, cancellation and order are RxJS's. It shares the root's conversation, session and stream, and
 * publishes its own `run-started` (with the agent's name) and `run-ended`; unsubscribed (the tree cancelled), its
 * loop is torn down first (its open pause resolves `cancelled`), then it ends `cancelled`, before its parent does.
 */
export function childRunsOf(ports: LoopPorts, loop: (initial: LoopState) => Observable<LoopState>, parent: RunContext, maxDepth: number): ChildRuns {
  return (tool, args, call) =>
    new Observable<string>((subscriber) => {
      const spec = tool.agent as AgentSpec;
      const depth = (parent.depth ?? 0) + 1;
      if (depth > maxDepth) {
        subscriber.error(new Error(`max agent depth: "${tool.name}" would run at depth ${depth}, past ${maxDepth}; no run was started`));
        return undefined;
      }
      const run = childContext(ports, parent, spec, tool, call, depth);
      const userBlock: Block = { id: ports.ids.next('block'), kind: 'user', role: 'user', payload: { text: spec.prompt(args) } };
      let latest = createLoopState(run, [userBlock]);
      let ended = false;
      const end = (status: RunStatus, error?: string): void => {
        ended = true;
        ports.publish(eventFrom('run-ended', run, ports.scheduler.now(), { status, ...(error === undefined ? {} : { error }) }));
      };
      ports.publish(eventFrom('run-started', run, ports.scheduler.now(), { agent: tool.name }));
      const child = loop(latest).subscribe({
        next: (state) => (latest = state),
        complete: () => {
          const { status, error } = latest.outcome ?? { status: 'completed' as const };
          end(status, error);
          if (status === 'completed') {
            subscriber.next(finalText(latest.blocks));
            subscriber.complete();
          } else subscriber.error(new Error(`agent "${tool.name}" ended ${status}${error === undefined ? '' : `: ${error}`}`));
        },
        error: (error: unknown) => {
          end('failed', String(error));
          subscriber.error(error);
        },
      });
      return () => {
        child.unsubscribe();
        if (!ended) end('cancelled');
      };
    });
}

/** A child run's context: the root's conversation and session, ids of its own, its agent's engine, tools and prompt. */
function childContext(ports: LoopPorts, parent: RunContext, spec: AgentSpec, tool: Tool, call: ToolCall, depth: number): RunContext {
  const system: Block[] = spec.system ? [{ id: `${call.id}:system`, kind: 'system', role: 'system', payload: { text: spec.system } }] : [];
  const tools = spec.tools ? ownTools(spec, ports) : undefined;
  return {
    conv_id: parent.conv_id,
    session_id: parent.session_id,
    inference_id: ports.ids.next('inf'),
    turn_id: parent.turn_id,
    history: system,
    ...(tools ? { tools } : { allowedTools: plainTools(registryOf(ports, parent)), ...(parent.tools ? { tools: parent.tools } : {}) }),
    ...(spec.maxIterations === undefined ? {} : { maxIterations: spec.maxIterations }),
    ...((spec.engine ?? parent.engine) ? { engine: spec.engine ?? parent.engine } : {}),
    depth,
    path: [...(parent.path ?? []), { inference_id: parent.inference_id, tool_call_id: call.id, name: tool.name }],
    parent: { inference_id: parent.inference_id, tool_call_id: call.id },
    stepMode: spec.stepMode,
    // One tally for the tree: the root's run-ended says what all of it used.
    ...(parent.usage ? { usage: parent.usage } : {}),
  };
}

/** A child's answer: the text of its last model message. */
function finalText(blocks: readonly Block[]): string {
  for (let i = blocks.length - 1; i >= 0; i -= 1) {
    const block = blocks[i] as Block;
    if (block.kind === 'llm_text') return (block.payload as { text: string }).text;
  }
  return '';
}

/** The tools of an agent that names its own, built once per agent and clock. */
const OWN_TOOLS = new WeakMap<AgentSpec, WeakMap<object, RunTools>>();

function ownTools(spec: AgentSpec, ports: LoopPorts): RunTools {
  const byClock = OWN_TOOLS.get(spec) ?? new WeakMap<object, RunTools>();
  OWN_TOOLS.set(spec, byClock);
  let tools = byClock.get(ports.scheduler);
  if (!tools) {
    const registry = createToolRegistry(spec.tools ?? []);
    tools = { registry, executor: createToolExecutor(registry, {}, ports.scheduler) };
    byClock.set(ports.scheduler, tools);
  }
  return tools;
}

/** The default tools of a child: every tool of its parent's that is not an agent tool, one set per registry. */
const PLAIN_TOOLS = new WeakMap<ToolRegistry, ReadonlySet<string>>();

function plainTools(registry: ToolRegistry): ReadonlySet<string> {
  let names = PLAIN_TOOLS.get(registry);
  if (!names) {
    names = new Set(registry.names().filter((name) => registry.get(name)?.agent === undefined));
    PLAIN_TOOLS.set(registry, names);
  }
  return names;
}
