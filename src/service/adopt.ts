import type { FrameEvent, Store } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';

/**
 * Brings a conversation another instance created or went on with into this one: its session (from the
 * store, as a restart would, but without a run; an idle session here is brought up to date), and its
 * seq from the stored log, so `ws.hello`'s `last_seq` is the service's and not this instance's.
 */
export async function adoptConversation(stepwise: Stepwise, store: Store<FrameEvent>, convId: string): Promise<void> {
  const [record, lastSeq] = await Promise.all([store.conversation(convId), store.lastSeq(convId)]);
  if (!record) return;
  if (lastSeq > stepwise.hub.lastSeq(convId)) stepwise.hub.seed(convId, lastSeq);
  // A run here is this instance's own: it knows its conversation better than the store yet does.
  if (stepwise.sessions.get(convId)?.running) return;
  const [turns, engineState] = await Promise.all([store.turns(convId), store.engineState(convId)]);
  if (stepwise.sessions.get(convId)?.running) return;
  stepwise.sessions.adopt({ ...record, turns, last_seq: lastSeq, ...(engineState === undefined ? {} : { engine_state: engineState }) });
}
