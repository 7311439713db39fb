import { tap } from 'rxjs';
import type { Block } from '../core/turns.js';
import type { EngineEvent, EngineMiddleware, InferenceRequest } from '../core/engine.js';

/** Prepends a system prompt unless the transcript already starts with one. */
export function systemPrompt(text: string): EngineMiddleware {
  return (engine) => ({
    ...engine,
    infer: (request) => {
      if (request.blocks[0]?.kind === 'system') return engine.infer(request);
      const system: Block = { id: `${request.session_id}:system`, kind: 'system', role: 'system', payload: { text } };
      return engine.infer({ ...request, blocks: [system, ...request.blocks] });
    },
  });
}

/**
 * Moves each tool_use block right after the tool_call blocks of its step. Providers (Anthropic,
 * OpenAI) reject a transcript where a tool result does not directly follow the calls it answers.
 */
export function reorderToolResults(): EngineMiddleware {
  return (engine) => ({
    ...engine,
    infer: (request) => engine.infer({ ...request, blocks: groupToolResults(request.blocks) }),
  });
}

function groupToolResults(blocks: readonly Block[]): Block[] {
  const uses = new Map<string, Block>();
  for (const block of blocks) if (block.kind === 'tool_use') uses.set(block.payload.id, block);
  const ordered: Block[] = [];
  const placed = new Set<string>();
  const place = (id: string): void => {
    const use = uses.get(id);
    if (use && !placed.has(id)) {
      ordered.push(use);
      placed.add(id);
    }
  };
  blocks.forEach((block, index) => {
    if (block.kind === 'tool_use') return place(block.payload.id);
    ordered.push(block);
    if (block.kind !== 'tool_call' || blocks[index + 1]?.kind === 'tool_call') return;
    // The last call of a run of calls: their results go right here, in call order.
    let first = index;
    while (first > 0 && blocks[first - 1]?.kind === 'tool_call') first -= 1;
    for (const call of blocks.slice(first, index + 1)) if (call.kind === 'tool_call') place(call.payload.id);
  });
  return ordered;
}

/** Reports each request and each engine event to `log`, for debugging a provider. */
export function logging(log: (line: string, fields: Record<string, unknown>) => void): EngineMiddleware {
  return (engine) => ({
    ...engine,
    infer: (request: InferenceRequest) => {
      log('inference request', { engine: engine.name, blocks: request.blocks.length, tools: request.tools.map((t) => t.name) });
      return engine.infer(request).pipe(tap((event: EngineEvent) => log(`engine ${event.type}`, { ...event })));
    },
  });
}
