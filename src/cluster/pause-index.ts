import type { Observable } from 'rxjs';
import type { SequencedEvent } from '../streams/events.js';

export interface PauseIndex {
  /** The conversation of a pause this instance has relayed, recently; undefined when not known here. */
  convOf(pauseId: string): string | undefined;
  dispose(): void;
}

/** How many pauses are remembered: the newest, as a dashboard answers the pause it was just shown. */
const REMEMBERED = 10_000;

/**
 * Which conversation each pause belongs to, learnt from the `paused` frames this instance relays to its
 * clients (its own runs' and, through the store's tail, other instances'). A continue posted here for a
 * pause its dashboard was shown finds the run's conversation without asking the store (one Redis round
 * trip less in `cluster_resume`). A pause never changes conversation, so what is remembered stays true.
 */
export function createPauseIndex(frames$: Observable<SequencedEvent>, limit = REMEMBERED): PauseIndex {
  const convOfPause = new Map<string, string>();
  const subscription = frames$.subscribe(({ event }) => {
    if (event.type !== 'paused') return;
    convOfPause.set(event.pause.pause_id, event.conv_id);
    if (convOfPause.size > limit) convOfPause.delete(convOfPause.keys().next().value as string);
  });
  return {
    convOf: (pauseId) => convOfPause.get(pauseId),
    dispose: () => subscription.unsubscribe(),
  };
}
