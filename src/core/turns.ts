/**
 * Turns and blocks: the append-only transcript of a session (docs/protocol.md, Conventions).
 * A turn is the list of blocks one run produced; a session's history is its turns in order.
 */

export type BlockKind = 'system' | 'user' | 'llm_text' | 'tool_call' | 'tool_use' | 'reasoning';

interface BlockBase<K extends BlockKind, P> {
  readonly id: string;
  readonly kind: K;
  readonly role?: string;
  readonly payload: P;
  /** Free-form annotations, e.g. `original_args` on an edited tool_call. */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export type SystemBlock = BlockBase<'system', { readonly text: string }>;
export type UserBlock = BlockBase<'user', { readonly text: string }>;
export type LlmTextBlock = BlockBase<'llm_text', { readonly text: string }>;
export type ReasoningBlock = BlockBase<'reasoning', { readonly text: string }>;
export type ToolCallBlock = BlockBase<'tool_call', { readonly id: string; readonly name: string; readonly args: unknown }>;
export type ToolUseBlock = BlockBase<
  'tool_use',
  { readonly id: string; readonly result: unknown; readonly error?: string }
>;

export type Block = SystemBlock | UserBlock | LlmTextBlock | ReasoningBlock | ToolCallBlock | ToolUseBlock;

export interface Turn {
  readonly id: string;
  readonly blocks: readonly Block[];
}

/** A tool call as the model asked for it (or as the operator edited it). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly args: unknown;
}

export const isToolCallBlock = (block: Block): block is ToolCallBlock => block.kind === 'tool_call';
export const isToolUseBlock = (block: Block): block is ToolUseBlock => block.kind === 'tool_use';

/** Tool calls that have no `tool_use` block with the same id yet, in the order they were asked for. */
export function pendingToolCalls(blocks: readonly Block[]): ToolCall[] {
  // One pass that allocates nothing but its answer: the calls open at any point are few (one batch),
  // so each result is matched against a short list and removed in place. The loop asks this at every
  // step of a growing turn; `splice` and a `findIndex` closure per result allocated more at every step
  // than the scan itself costs.
  const pending: ToolCall[] = [];
  // Results that came before their call (not what a loop writes, but a valid list): rare, kept apart.
  let early: string[] | undefined;
  for (const block of blocks) {
    if (isToolCallBlock(block)) pending.push(block.payload);
    else if (isToolUseBlock(block)) {
      const at = indexOfCall(pending, block.payload.id);
      if (at < 0) (early ??= []).push(block.payload.id);
      else {
        pending.copyWithin(at, at + 1);
        pending.pop();
      }
    }
  }
  return early ? pending.filter((call) => !early.includes(call.id)) : pending;
}

function indexOfCall(calls: readonly ToolCall[], id: string): number {
  for (let i = 0; i < calls.length; i += 1) if ((calls[i] as ToolCall).id === id) return i;
  return -1;
}
