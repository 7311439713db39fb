import type { StepFilter } from '../core/store.js';
import { isToolCallBlock, isToolUseBlock, type Block, type ToolCall } from '../core/turns.js';
import type { PausePhase, PauseToolCall } from '../streams/events.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { LoopState, RunContext } from './loop-state.js';

/**
 * When a run pauses (docs/protocol.md, Breakpoints and result edits): step mode, narrowed by its filter, and each
 * tool's own breakpoint. Pure functions of the state, the filter and the registry, so the loop's fast path (step mode
 * off, no breakpoint tool) costs one registry lookup per pending call.
 */

/** Whether any pending call's tool has a breakpoint (it may still decline, by its predicate). */
export function hasBreakpointTool(registry: ToolRegistry, calls: readonly ToolCall[]): boolean {
  for (const call of calls) if (registry.get(call.name)?.breakpoint !== undefined) return true;
  return false;
}

/**
 * The pause's `tool_calls`, each marked `breakpoint: true` when its tool asks for this pause, and a question's with
 * the schema its answer must meet (docs/protocol.md, Questions for a human).
 */
export function pauseCalls(registry: ToolRegistry, run: RunContext, calls: readonly ToolCall[]): PauseToolCall[] {
  return calls.map((call) => {
    const base = { id: call.id, name: call.name, input: call.args };
    const human = registry.get(call.name)?.human;
    if (human) return { ...base, breakpoint: true as const, answer_schema: human.answer_schema };
    return wantsPause(registry, run, call) ? { ...base, breakpoint: true as const } : base;
  });
}

function wantsPause(registry: ToolRegistry, run: RunContext, call: ToolCall): boolean {
  const rule = registry.get(call.name)?.breakpoint;
  if (rule === undefined) return false;
  if (rule === true) return true;
  try {
    return rule(call.args, { tool_call_id: call.id, conv_id: run.conv_id, session_id: run.session_id, inference_id: run.inference_id }) === true;
  } catch {
    // A predicate that fails cannot say the call is safe to run unseen: pause.
    return true;
  }
}

/**
 * Whether step mode (on, with this filter) pauses here: at a listed phase only, and with a `tools`
 * filter only when a pending call (`after_inference`) or a call that just ran (`after_tools`) names one.
 */
export function stepWants(filter: StepFilter | undefined, phase: PausePhase, state: LoopState, calls: readonly ToolCall[]): boolean {
  if (!filter) return true;
  if (filter.phases && !filter.phases.includes(phase)) return false;
  const { tools } = filter;
  if (!tools) return true;
  const names = phase === 'after_inference' ? calls.map((call) => call.name) : lastResultNames(state);
  return names.some((name) => tools.includes(name));
}

/** The names of the tools whose results end the turn so far: the batch that just ran. */
function lastResultNames(state: LoopState): string[] {
  const ids = new Set<string>();
  for (let i = state.blocks.length - 1; i >= 0; i -= 1) {
    const block = state.blocks[i];
    if (!block || !isToolUseBlock(block)) break;
    ids.add(block.payload.id);
  }
  return state.blocks.filter(isToolCallBlock).filter((block) => ids.has(block.payload.id)).map((block) => block.payload.name);
}

/** The results of the batch that just ran, by tool_call_id: what an `after_tools` edit may replace. */
export function lastResults(blocks: readonly Block[]): Record<string, unknown> {
  const results: Record<string, unknown> = {};
  for (let i = blocks.length - 1; i >= 0; i -= 1) {
    const block = blocks[i];
    if (!block || !isToolUseBlock(block)) break;
    results[block.payload.id] = block.payload.result;
  }
  return results;
}
