import type { ContentBlockParam, MessageParam, Tool, ToolChoice } from '@anthropic-ai/sdk/resources/messages';
import type { Block } from '../core/turns.js';
import type { InferenceRequest, ToolSpec } from '../core/engine.js';
import { groupTranscript, parseArgs, resultText } from './transcript.js';

/**
 * Messages API turns: the system prompt goes apart; tool results ride in one user message,
 * flagged `is_error: true` when they failed; adjacent same-role turns merge because the API
 * wants user and assistant to alternate.
 */
export function toAnthropicMessages(blocks: readonly Block[]): { system?: string; messages: MessageParam[] } {
  const { system, groups } = groupTranscript(blocks);
  const messages: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  const append = (role: 'user' | 'assistant', content: ContentBlockParam[]) => {
    if (content.length === 0) return;
    const last = messages[messages.length - 1];
    if (last?.role === role) last.content.push(...content);
    else messages.push({ role, content });
  };
  for (const group of groups) {
    if (group.role === 'user') append('user', [{ type: 'text', text: group.text }]);
    else if (group.role === 'tool') {
      append(
        'user',
        group.results.map((r) =>
          r.error === undefined
            ? { type: 'tool_result' as const, tool_use_id: r.id, content: resultText(r.result) }
            : { type: 'tool_result' as const, tool_use_id: r.id, content: errorText(r.result, r.error), is_error: true },
        ),
      );
    } else {
      const content: ContentBlockParam[] = group.text === '' ? [] : [{ type: 'text', text: group.text }];
      for (const c of group.calls) content.push({ type: 'tool_use', id: c.id, name: c.name, input: inputObject(c.args) });
      append('assistant', content);
    }
  }
  return system === undefined ? { messages } : { system, messages };
}

function errorText(result: unknown, error: string): string {
  return result === undefined || result === null ? error : `${error}\n${resultText(result)}`;
}

/** `input` must be an object; arguments kept as a raw string (invalid JSON) are wrapped so the model sees them. */
function inputObject(args: unknown): Record<string, unknown> {
  const value = typeof args === 'string' ? parseArgs(args) : args;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  return { raw: value };
}

export function toAnthropicTools(tools: readonly ToolSpec[]): Tool[] {
  return tools.map((t) => {
    const { $schema: _ignored, ...schema } = t.parameters;
    return { name: t.name, description: t.description, input_schema: { type: 'object', ...schema } };
  });
}

/** Anthropic spells `required` as `any` and carries parallelism on the choice itself. */
export function toAnthropicToolChoice(request: InferenceRequest): ToolChoice | undefined {
  const disable = request.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  switch (request.toolChoice) {
    case 'none':
      return { type: 'none' };
    case 'required':
      return { type: 'any', ...disable };
    case 'auto':
      return { type: 'auto', ...disable };
    default:
      return request.parallelToolCalls === false ? { type: 'auto', ...disable } : undefined;
  }
}
