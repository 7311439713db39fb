import type { ListedPause } from '../core/directory.js';
import type { FrameEvent, Store } from '../core/store.js';
import type { InstanceStore } from './instance.js';
import { wirePause } from './wire-pause.js';

/** Pauses read from the deadline index at a time. */
const PAGE = 200;

/**
 * The inbox of a service (docs/protocol.md, The inbox): the first `limit` pending pauses `shown`
 * lets through, soonest deadline first, read from the store's deadline index a page at a time
 * with their conversations' records. This instance's own pauses are in the index once committed,
 * hence the flush first. A pause decided while the pages are read may shift the next page by one:
 * such a listing can miss a pause the next one shows.
 */
export async function soonestStoredPauses(
  store: Pick<Store<FrameEvent>, 'flush'> & Pick<InstanceStore, 'pausesByDeadline'>,
  shown: (listed: ListedPause) => boolean,
  limit: number,
): Promise<ListedPause[]> {
  await store.flush();
  const found: ListedPause[] = [];
  for (let offset = 0; found.length < limit; offset += PAGE) {
    const page = await store.pausesByDeadline(offset, PAGE);
    for (const { pause, record } of page.pauses) {
      const listed: ListedPause = { pause: wirePause(pause), owner: record.owner, profile: record.profile ?? null };
      if (shown(listed)) found.push(listed);
      if (found.length === limit) break;
    }
    if (page.ended) break;
  }
  return found;
}
