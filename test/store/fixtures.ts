import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type {
  ConversationRecord,
  DecisionRecord,
  FrameEvent,
  RunCheckpoint,
  StoredFrame,
  StoredPause,
} from '../../src/core/store.js';

/** A frame event shaped like the hub's (`text-delta`), plain JSON. */
export interface TestEvent extends FrameEvent {
  readonly session_id: string;
  readonly inference_id: string;
  readonly turn_id: string;
  readonly at: number;
  readonly delta: string;
}

export const conversation = (conv_id: string, overrides: Partial<ConversationRecord> = {}): ConversationRecord => ({
  conv_id,
  session_id: `sess_${conv_id}`,
  created_at: 1_700_000_000_000,
  step: { enabled: false },
  ...overrides,
});

export const frame = (conv_id: string, seq: number): StoredFrame<TestEvent> => ({
  seq,
  event: { type: 'text-delta', conv_id, session_id: `sess_${conv_id}`, inference_id: 'inf_1', turn_id: 'turn_1', at: 1_700_000_000_000 + seq, delta: `d${seq}` },
});

/** Frames `from`..`to` (inclusive) of one conversation. */
export const frames = (conv_id: string, from: number, to: number): StoredFrame<TestEvent>[] =>
  Array.from({ length: to - from + 1 }, (_, index) => frame(conv_id, from + index));

export const pause = (conv_id: string, pause_id: string, overrides: Partial<StoredPause> = {}): StoredPause => ({
  pause_id,
  phase: 'after_inference',
  summary: '1 tool call pending: echo',
  deadline_ms: 1_700_000_030_000,
  conv_id,
  session_id: `sess_${conv_id}`,
  inference_id: 'inf_1',
  turn_id: 'turn_1',
  tool_calls: [{ id: 'call_1', name: 'echo', input: { text: 'hi' } }],
  ...overrides,
});

export const decision = (conv_id: string, pause_id: string, overrides: Partial<DecisionRecord> = {}): DecisionRecord => ({
  conv_id,
  pause_id,
  phase: 'after_inference',
  inference_id: 'inf_1',
  reason: 'edited',
  by: 'alice',
  at_ms: 1_700_000_010_000,
  edits: { call_1: { before: { text: 'hi' }, after: { text: 'hello' } } },
  ...overrides,
});

export const checkpoint = (conv_id: string, inference_id: string, overrides: Partial<RunCheckpoint> = {}): RunCheckpoint => ({
  conv_id,
  session_id: `sess_${conv_id}`,
  inference_id,
  turn_id: 'turn_1',
  next: 'after_inference',
  iteration: 1,
  blocks: [
    { id: 'b1', kind: 'user', role: 'user', payload: { text: 'hi' } },
    { id: 'b2', kind: 'tool_call', role: 'assistant', payload: { id: 'call_1', name: 'echo', args: { text: 'hi' } } },
  ],
  allowed_tools: ['echo'],
  max_iterations: 5,
  at_ms: 1_700_000_000_500,
  ...overrides,
});

/** A temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'stepwise-store-'): { readonly dir: string; readonly remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A fresh temporary dir for each test of the calling `describe`, removed after it (registered first,
 * its removal runs after the test's own afterEach hooks, which close what used it).
 */
export function useTempDir(): () => string {
  let temp: ReturnType<typeof tempDir> | undefined;
  beforeEach(() => {
    temp = tempDir();
  });
  afterEach(() => temp?.remove());
  return () => {
    if (!temp) throw new Error('useTempDir: no test is running');
    return temp.dir;
  };
}
