import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { FunctionTool, ResponseInputItem } from 'openai/resources/responses/responses';
import type { Block } from '../core/turns.js';
import type { ToolSpec } from '../core/engine.js';
import { groupTranscript, resultText, stringifyArgs, wireSchema } from './transcript.js';

/**
 * Chat Completions messages: one assistant message per step with all its tool calls, then one
 * `tool` message per result (errors as `{"error": …}` since the API has no error flag).
 */
export function toChatMessages(blocks: readonly Block[]): ChatCompletionMessageParam[] {
  const { system, groups } = groupTranscript(blocks);
  const messages: ChatCompletionMessageParam[] = system === undefined ? [] : [{ role: 'system', content: system }];
  for (const group of groups) {
    if (group.role === 'user') messages.push({ role: 'user', content: group.text });
    else if (group.role === 'tool') {
      for (const r of group.results) messages.push({ role: 'tool', tool_call_id: r.id, content: resultText(r.result, r.error) });
    } else if (group.calls.length === 0) messages.push({ role: 'assistant', content: group.text });
    else {
      messages.push({
        role: 'assistant',
        // Compatible servers differ on `''` versus `null` with tool calls; null is what OpenAI documents.
        content: group.text === '' ? null : group.text,
        tool_calls: group.calls.map((c) => ({
          id: c.id,
          type: 'function' as const,
          function: { name: c.name, arguments: stringifyArgs(c.args) },
        })),
      });
    }
  }
  return messages;
}

export function toChatTools(tools: readonly ToolSpec[]): ChatCompletionTool[] {
  return tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: wireSchema(t) },
  }));
}

/** Responses API input items, stateless: every call and its output is sent again each step. */
export function toResponsesInput(blocks: readonly Block[]): { instructions?: string; input: ResponseInputItem[] } {
  const { system, groups } = groupTranscript(blocks);
  const input: ResponseInputItem[] = [];
  for (const group of groups) {
    if (group.role === 'user') input.push({ role: 'user', content: group.text });
    else if (group.role === 'tool') {
      for (const r of group.results) {
        input.push({ type: 'function_call_output', call_id: r.id, output: resultText(r.result, r.error) });
      }
    } else {
      if (group.text !== '') input.push({ role: 'assistant', content: group.text });
      for (const c of group.calls) {
        input.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: stringifyArgs(c.args) });
      }
    }
  }
  return system === undefined ? { input } : { instructions: system, input };
}

export function toResponsesTools(tools: readonly ToolSpec[]): FunctionTool[] {
  // strict: false because our schemas are not written for Structured Outputs (optional fields).
  return tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: wireSchema(t), strict: false }));
}
