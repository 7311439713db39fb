import type { Observable } from 'rxjs';
import type { PauseFeedFrame } from '../core/directory.js';
import type { LogFrame } from '../streams/frame-codec.js';
import { keepNewest } from '../core/bounded-map.js';

/** A frame the index learns from: one a socket relayed, or one of the service's pause feed (its text alone). */
type IndexedFrame = LogFrame | (PauseFeedFrame & { readonly event?: undefined });

export interface PauseIndex {
  /** The conversation of a pause this instance has relayed, recently; undefined when not known here. */
  convOf(pauseId: string): string | undefined;
  dispose(): void;
}

/** How many pauses are remembered: the newest, as a dashboard answers the pause it was just shown. */
const REMEMBERED = 10_000;

/**
 * Which conversation each pause belongs to, learnt from the `paused` frames this instance relays to its
 * clients (its own runs' and, through the store's tail, other instances') and from the service's pause
 * feed (every instance's). A continue posted here finds the run's conversation without asking the store
 * (one Redis round trip less on a forwarded decision, and under load no wait behind the store's commit). A
 * pause never changes conversation, so what is remembered stays true.
 */
export function createPauseIndex(frames$: Observable<IndexedFrame>, limit = REMEMBERED): PauseIndex {
  const convOfPause = new Map<string, string>();
  const subscription = frames$.subscribe((frame) => {
    const pauseId = frame.event ? (frame.event.type === 'paused' ? frame.event.pause.pause_id : undefined) : pauseOfText(frame.text);
    if (pauseId === undefined) return;
    keepNewest(convOfPause, pauseId, frame.event ? frame.event.conv_id : frame.conv_id, limit);
  });
  return {
    convOf: (pauseId) => convOfPause.get(pauseId),
    dispose: () => subscription.unsubscribe(),
  };
}

/** How a `debugger.pause` frame's text begins: what the codec writes first (src/streams/sem-frames.ts). */
const PAUSE_FRAME = '{"sem":true,"event":{"type":"debugger.pause",';

/** A pause frame's id; any other frame's text is only looked at, never parsed. */
function pauseOfText(text: string): string | undefined {
  if (!text.startsWith(PAUSE_FRAME)) return undefined;
  return (JSON.parse(text) as { event: { pause_id?: string } }).event.pause_id;
}
