import type { PauseInfo } from '../core/pauses.js';
import type { StoredPause } from '../core/store.js';

/** A stored pause as the routes show it (docs/protocol.md, The pause object: tool_calls only at after_inference). */
export function wirePause(pause: StoredPause): PauseInfo {
  const { tool_calls, ...rest } = pause;
  return { ...rest, tool_calls: pause.phase === 'after_inference' ? tool_calls.map(({ id, name, input }) => ({ id, name, input })) : [] };
}
