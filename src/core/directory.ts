import type { Observable } from 'rxjs';
import type { PauseInfo } from './pauses.js';
import type { ForkOrigin, StepFilter } from './store.js';
import type { Turn } from './turns.js';

/**
 * The conversation directory (docs/protocol.md, Several instances): what the read routes show of
 * conversations and their pauses, as the whole service has them. One process alone answers from its
 * sessions; an instance of a service also from the store every instance shares. Routes read through
 * the port and never know which it is; who may see what (`owner`) stays theirs to decide.
 */

/** A conversation as `GET /conversations` lists it, with the user it belongs to. */
export interface ConversationSummary {
  readonly conv_id: string;
  readonly session_id: string;
  /** The user who created it, when auth is on; not shown. */
  readonly owner?: string;
  readonly running: boolean;
  readonly step_mode: boolean;
  /** Epoch ms. */
  readonly created_at: number;
  readonly profile: string | null;
  readonly forked_from?: ForkOrigin;
}

/** One conversation as `GET /conversations/:conv_id` shows it. */
export interface ConversationView extends Omit<ConversationSummary, 'created_at'> {
  readonly step_filter?: StepFilter;
  readonly turns: readonly Pick<Turn, 'id' | 'blocks'>[];
  readonly pending_pauses: readonly PauseInfo[];
}

/** A pending pause, and the user and profile its conversation belongs to. */
export interface ListedPause {
  readonly pause: PauseInfo;
  readonly owner: string | undefined;
  /** The conversation's profile (docs/protocol.md, Profiles file); null or absent without one. */
  readonly profile?: string | null;
}

/**
 * A `debugger.pause` or `debugger.resume` frame of any conversation, once committed, as the inbox
 * socket streams it (docs/protocol.md, The inbox), with whom the conversation is for.
 */
export interface PauseFeedFrame {
  readonly conv_id: string;
  readonly owner: string | undefined;
  readonly profile: string | null;
  /** The frame's wire text, exactly as the conversation's own socket sends it (with its seq). */
  readonly text: string;
}

/** Soonest deadline first; ties by pause id, so the order is stable (docs/protocol.md, The inbox). */
export const bySoonest = ({ pause: a }: ListedPause, { pause: b }: ListedPause): number =>
  a.deadline_ms - b.deadline_ms || (a.pause_id < b.pause_id ? -1 : a.pause_id > b.pause_id ? 1 : 0);

export interface ConversationDirectory {
  /** Every conversation. Rejects with a `StoreError` when the store cannot be read. */
  list(): Promise<readonly ConversationSummary[]>;
  /** One conversation; undefined when unknown. */
  get(convId: string): Promise<ConversationView | undefined>;
  /** The pending pauses, of one conversation or of all. */
  pauses(convId?: string): Promise<readonly ListedPause[]>;
  /**
   * The first `limit` pending pauses of every conversation that `shown` lets through, soonest
   * deadline first (ties: by pause id): the inbox. A service reads them from its deadline index a
   * page at a time, so 20 of 100 000 cost about 20 reads, not 100 000.
   */
  soonestPauses(shown: (listed: ListedPause) => boolean, limit: number): Promise<readonly ListedPause[]>;
  /**
   * The pause and resume frames of every conversation, live: this process's runs', and on an instance
   * of a service every instance's. Hot; frames before a subscription are not replayed (`pauses` lists them).
   */
  readonly pauseFrames$: Observable<PauseFeedFrame>;
  /**
   * Makes a conversation another instance created or went on with known here (its session and its
   * seq), before a route or a socket reads it here. Nothing for one process alone.
   */
  open(convId: string): Promise<void>;
}
