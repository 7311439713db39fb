import type { Block } from '../core/turns.js';
import type { JsonSchema, ToolSpec } from '../core/engine.js';
import { toJsonText } from '../core/json.js';

/**
 * A provider-neutral view of a transcript: blocks grouped the way every provider wants them.
 * One assistant step (its text, reasoning and tool calls) becomes one group, and the tool results
 * that follow it become one group, so each provider mapper only has to rename fields.
 */
export type TranscriptGroup =
  | { readonly role: 'user'; readonly text: string }
  | {
      readonly role: 'assistant';
      readonly text: string;
      readonly calls: readonly { readonly id: string; readonly name: string; readonly args: unknown }[];
    }
  | {
      readonly role: 'tool';
      readonly results: readonly { readonly id: string; readonly result: unknown; readonly error?: string }[];
    };

export interface Transcript {
  /** All system blocks, joined: every provider takes one system prompt. */
  readonly system: string | undefined;
  readonly groups: readonly TranscriptGroup[];
}

type MutableAssistant = { role: 'assistant'; text: string; calls: { id: string; name: string; args: unknown }[] };
type MutableTool = { role: 'tool'; results: { id: string; result: unknown; error?: string }[] };

export function groupTranscript(blocks: readonly Block[]): Transcript {
  const system: string[] = [];
  const groups: (TranscriptGroup | MutableAssistant | MutableTool)[] = [];
  const last = () => groups[groups.length - 1];
  for (const block of blocks) {
    switch (block.kind) {
      case 'system':
        system.push(block.payload.text);
        break;
      case 'user':
        groups.push({ role: 'user', text: block.payload.text });
        break;
      // Reasoning is not replayed: providers either reject it without their signature or ignore it.
      case 'reasoning':
        break;
      case 'llm_text':
      case 'tool_call': {
        let group = last();
        if (group?.role !== 'assistant') {
          group = { role: 'assistant', text: '', calls: [] };
          groups.push(group);
        }
        const assistant = group as MutableAssistant;
        if (block.kind === 'llm_text') assistant.text += block.payload.text;
        else assistant.calls.push({ id: block.payload.id, name: block.payload.name, args: block.payload.args });
        break;
      }
      case 'tool_use': {
        let group = last();
        if (group?.role !== 'tool') {
          group = { role: 'tool', results: [] };
          groups.push(group);
        }
        const { id, result, error } = block.payload;
        (group as MutableTool).results.push(error === undefined ? { id, result } : { id, result, error });
        break;
      }
    }
  }
  return { system: system.length > 0 ? system.join('\n\n') : undefined, groups };
}

/** Arguments as the wire wants them: a JSON string (a raw, unparsable string is passed through). */
export function stringifyArgs(args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {});
}

/** Assembled argument text to a value: `{}` when empty, the raw string when it is not valid JSON. */
export function parseArgs(raw: string): unknown {
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** A tool result as text; OpenAI has no error flag, so an error travels as `{"error": …}`. */
export function resultText(result: unknown, error?: string): string {
  if (error !== undefined) return toJsonText(result === undefined ? { error } : { error, result });
  if (typeof result === 'string') return result;
  return toJsonText(result ?? null);
}

/** The JSON Schema sent to providers; `$schema` is dropped because some compatible servers reject it. */
export function wireSchema(spec: ToolSpec): JsonSchema {
  const { $schema: _ignored, ...schema } = spec.parameters;
  return schema;
}
