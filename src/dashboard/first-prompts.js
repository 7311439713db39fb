// What a conversation is about, for the sidebar: its first prompt, read once per conversation from
// GET /conversations/:conv_id (its first turn's user block). A first prompt never changes, so one
// answer is kept for good; a conversation with no turn yet is asked again on a later refresh.

const MAX_CHARS = 60;

/** The text of a turn's first user block ('' when it has none). */
export function firstPromptOf(turns) {
  for (const turn of turns ?? []) {
    const user = turn?.blocks?.find((block) => block.kind === 'user');
    const payload = user?.payload;
    const text = typeof payload === 'string' ? payload : payload?.text ?? payload?.prompt ?? payload?.content;
    if (typeof text === 'string' && text.trim()) return text.trim();
  }
  return '';
}

/** Cuts a prompt to one short line for the list; the full text stays in the item's title. */
export function truncate(text, max = MAX_CHARS) {
  const line = text.replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** `load(convId)` reads a conversation; `onLearned()` runs when a new first prompt is known. */
export function createFirstPrompts({ load, onLearned }) {
  const known = new Map();
  const asking = new Set();

  const learn = (convId, turns) => {
    const text = firstPromptOf(turns);
    if (!text || known.get(convId) === text) return;
    known.set(convId, text);
    onLearned();
  };

  return {
    get: (convId) => known.get(convId),
    learn,
    /** Asks for the first prompts still unknown among these conversations, one request each at a time. */
    fetchMissing(convIds) {
      for (const convId of convIds) {
        if (known.has(convId) || asking.has(convId)) continue;
        asking.add(convId);
        load(convId)
          .then((conv) => learn(convId, conv.turns))
          .catch(() => undefined)
          .finally(() => asking.delete(convId));
      }
    },
  };
}
