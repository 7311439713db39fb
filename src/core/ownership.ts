/**
 * The ownership port (docs/protocol.md, Several instances): which process runs a conversation. One
 * process alone runs every conversation; an instance of a service takes a conversation's lease first,
 * and every write of the run then carries its fencing token.
 */
export interface RunOwnership {
  /**
   * Takes the conversation's run for this process before a run starts (or a fork is made) on it:
   * false while another live instance runs it. Rejects when the service's store cannot be reached.
   */
  claim(convId: string): Promise<boolean>;
}

/** One process alone: every run is its own. */
export const SOLE_OWNERSHIP: RunOwnership = Object.freeze({ claim: () => Promise.resolve(true) });
