// The inbox shows the soonest `limit` pauses (docs/protocol.md, The inbox: `/ws/pauses?limit=`): an instance
// holding 100 000 paused runs would otherwise send every one in its hello and the page would draw a row
// for each. When the server says it cut the list, the window keeps the soonest `limit` as pauses come
// and go, and fills up again from `GET /pauses?limit=` once answered rows leave room.

export const DEFAULT_LIMIT = 500;
const MAX_LIMIT = 10_000;
/** Pause ids resolved here lately, kept so that a listing read before their resume cannot bring them back. */
const GONE_MEMORY = 1_000;

/** The page's `?limit=` (1 to 10 000), else DEFAULT_LIMIT. */
export function limitOf(search) {
  const asked = Number(new URLSearchParams(search).get('limit') ?? '');
  return Number.isInteger(asked) && asked >= 1 && asked <= MAX_LIMIT ? asked : DEFAULT_LIMIT;
}

/**
 * The window over the page's rows. `view` is the page's: `rows` (a Map by pause id), `ordered()` (rows
 * soonest first), `selected()` (the pause id the keys act on), `make(pause)` (a row) and `changed()`
 * (redraw); `listSoonest(limit)` reads `GET /pauses?limit=`.
 */
export function createInboxWindow(limit, view, listSoonest) {
  let truncated = false;
  let refilling = false;
  const gone = new Set();

  // The latest rows past the limit go, never the one the keys act on (it may hold an open edit).
  const trim = () => {
    const over = view.ordered().slice(limit).filter((row) => row.pause.pause_id !== view.selected());
    for (const row of over) view.rows.delete(row.pause.pause_id);
    if (over.length > 0) truncated = true;
  };

  const refill = async () => {
    if (refilling) return;
    refilling = true;
    try {
      const { pauses = [] } = await listSoonest(limit);
      for (const pause of pauses) if (!view.rows.has(pause.pause_id) && !gone.has(pause.pause_id)) view.rows.set(pause.pause_id, view.make(pause));
      truncated = pauses.length >= limit;
      trim();
      view.changed();
    } catch {
      // The server cannot be reached now: the next row that leaves tries again, and a reconnect's hello lists them anyway.
    } finally {
      refilling = false;
    }
  };

  return {
    limit,
    get truncated() {
      return truncated;
    },
    /** The hello's list is in the rows: whether the server cut it. */
    listed(cut) {
      truncated = cut === true;
      trim();
    },
    /** A new pause's row is in the rows: past the limit, the latest go. */
    added() {
      trim();
    },
    /** A pause was resolved and its row removed: the window fills up again when the server has more. */
    removed(pauseId) {
      gone.add(pauseId);
      if (gone.size > GONE_MEMORY) gone.delete(gone.values().next().value);
      if (truncated && view.rows.size < limit) void refill();
    },
  };
}
