import type { Engine, Usage } from '../core/engine.js';
import type { RunCheckpoint } from '../core/store.js';
import type { Block, Turn } from '../core/turns.js';
import type { RunContext, RunTools } from '../operators/loop-state.js';
import type { RunOverrides } from './session.js';

/** The run's overrides over the session's defaults, field by field; an unset field keeps the default. */
export function mergeOverrides(defaults: RunOverrides, overrides: RunOverrides): RunOverrides {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) merged[key] = value;
  return merged as RunOverrides;
}

/** The overrides a run had, as its checkpoint keeps them. */
export function overridesOf(checkpoint: RunCheckpoint): RunOverrides {
  return {
    ...(checkpoint.allowed_tools ? { tools: checkpoint.allowed_tools } : {}),
    ...(checkpoint.system_prompt !== undefined ? { system_prompt: checkpoint.system_prompt } : {}),
    ...(checkpoint.max_iterations !== undefined ? { max_iterations: checkpoint.max_iterations } : {}),
  };
}

/** Whose run it is and what came before it: the session's ids, its finished turns and its system prompt. */
export interface RunOrigin {
  readonly conv_id: string;
  readonly session_id: string;
  readonly finished: readonly Turn[];
  /** The runtime's system prompt, unless the run's overrides set one. */
  readonly systemPrompt: string | undefined;
}

/** The ids of one run. */
export interface RunIds {
  readonly inference_id: string;
  readonly turn_id: string;
}

/** What stays fixed during one run: ids, the transcript before it, its limits, engine and tools. */
export function createRunContext(origin: RunOrigin, ids: RunIds, overrides: RunOverrides, engine?: Engine, tools?: RunTools, used?: Usage): RunContext {
  const systemPrompt = overrides.system_prompt ?? origin.systemPrompt;
  const system: Block[] = systemPrompt ? [{ id: `${origin.session_id}:system`, kind: 'system', role: 'system', payload: { text: systemPrompt } }] : [];
  return {
    conv_id: origin.conv_id,
    session_id: origin.session_id,
    inference_id: ids.inference_id,
    turn_id: ids.turn_id,
    history: [...system, ...origin.finished.flatMap((turn) => turn.blocks)],
    ...(overrides.tools ? { allowedTools: new Set(overrides.tools) } : {}),
    ...(overrides.max_iterations ? { maxIterations: overrides.max_iterations } : {}),
    ...(engine ? { engine } : {}),
    ...(tools ? { tools } : {}),
    // A run rebuilt from its checkpoint (restarted, woken) goes on counting from what it had used.
    usage: { input_tokens: used?.input_tokens ?? 0, output_tokens: used?.output_tokens ?? 0 },
  };
}
