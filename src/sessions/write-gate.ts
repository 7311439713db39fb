/**
 * Whether what a conversation's run does may still be published and stored. A suspended runtime
 * says nothing more (docs/protocol.md, Durability: its runs go on at the next start), and a run whose
 * conversation another instance took over says nothing more here (docs/protocol.md, Several instances).
 */
export interface WriteGate {
  /** True while the runtime is live and no other instance has taken the conversation's run. */
  writes(convId: string): boolean;
  /** Another instance took the conversation's run: what is left of it here is silent. */
  fence(convId: string): void;
  /** The conversation's session is this instance's (again). */
  unfence(convId: string): void;
  /** The runtime was suspended: a run stopped for the next start publishes and stores nothing on its way down. */
  mute(): void;
}

export function createWriteGate(): WriteGate {
  let live = true;
  const fenced = new Set<string>();
  return {
    // `fenced.size` first: the set is empty but for a takeover, and this runs for every event.
    writes: (convId) => live && (fenced.size === 0 || !fenced.has(convId)),
    fence: (convId) => void fenced.add(convId),
    unfence: (convId) => void fenced.delete(convId),
    mute: () => {
      live = false;
    },
  };
}
