import { filter, map, share, type Observable } from 'rxjs';
import type { PauseFeedFrame } from '../core/directory.js';
import type { SequencedEvent } from '../streams/events.js';
import { textOfFrame } from '../streams/frame-codec.js';
import type { FrameContext } from '../streams/sem-frames.js';
import type { SessionRegistry } from './registry.js';

/** Pause and resume frames name no model message: their text is the same whatever the context knows. */
const NO_MESSAGES: FrameContext = { messageOf: () => undefined };

/**
 * This process's committed pause and resume frames, each with its conversation's owner and profile
 * (docs/protocol.md, The inbox). Shared: one subscription to the frames however many sockets follow it.
 */
export function createLocalPauseFeed(events$: Observable<SequencedEvent>, sessions: Pick<SessionRegistry, 'get'>): Observable<PauseFeedFrame> {
  return events$.pipe(
    filter((frame) => frame.event.type === 'paused' || frame.event.type === 'resumed'),
    map((frame): PauseFeedFrame => {
      const convId = frame.event.conv_id;
      const session = sessions.get(convId);
      return { conv_id: convId, owner: session?.owner, profile: session?.profile ?? null, text: textOfFrame(frame, NO_MESSAGES) };
    }),
    share(),
  );
}
