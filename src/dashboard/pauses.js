// Pause cards: one per pause_id, whatever told us about it first (a debugger.pause frame or the
// pending_pauses of ws.hello). A card decides by POST /debug/continue and closes only when
// debugger.resume arrives, so every dashboard on the conversation closes it at the same moment.

import { createPauseCard } from './pause-card.js';
import { normalizePause } from './pause-object.js';

/**
 * Manages the cards. `decide(body)` posts a decision; `serverNow()` is the browser clock corrected
 * by the hello's server_time, so countdowns agree across machines whose clocks disagree.
 */
export function createPauseDeck({ decide, serverNow, convId, fork }) {
  const cards = new Map();

  const tick = () => {
    const now = serverNow();
    for (const card of cards.values()) if (card.open) card.render(now);
  };
  const timer = setInterval(tick, 200);

  return {
    /** Returns the card for this pause (`results`: what an after_tools pause could edit), creating it the first time the pause is heard of. */
    open(source, { results = [] } = {}) {
      const pause = normalizePause(source);
      let card = cards.get(pause.pause_id);
      // A card from ws.hello comes before the replayed results it could edit: rebuilt once they are known.
      const lacksResults = card?.open && results.length > 0 && !card.node.querySelector('[data-testid="pause-result"]');
      if (!card || lacksResults) {
        const old = card;
        card = createPauseCard(pause, results, { decide, serverNow, convId, fork });
        cards.set(pause.pause_id, card);
        old?.node.replaceWith(card.node);
      }
      return card.node;
    },
    /** Closes the card for a debugger.resume, showing why. */
    resolve(event) {
      const card = cards.get(event.pause_id ?? event.id);
      if (card?.open) card.resolve(event);
    },
    /** Fills resolved cards with their recorded decisions (who, what was denied or edited); returns those with no card. */
    record(decisions) {
      const unplaced = [];
      for (const decision of decisions ?? []) {
        const card = cards.get(decision.pause_id);
        if (card) card.record(decision);
        else unplaced.push(decision);
      }
      return unplaced;
    },
    /** Pauses still open here, for the header counter. */
    get openCount() {
      let count = 0;
      for (const card of cards.values()) if (card.open) count += 1;
      return count;
    },
    dispose() {
      clearInterval(timer);
      cards.clear();
    },
  };
}
