import type { Observable, Subscription } from 'rxjs';
import { toJsonText } from '../core/json.js';
import type { FrameEvent, Store } from '../core/store.js';
import { resumedIteration } from '../sessions/recovery.js';
import type { SequencedEvent } from '../streams/events.js';
import { toSemFrame, type FrameContext, type Message, type SemFrame } from './sem-frames.js';

/** One hub item as the clients get it. */
export interface EncodedFrame {
  /** The frame as JSON-safe data: what `/hydrate` lists. */
  readonly frame: SemFrame;
  /** `JSON.stringify(frame)`: the payload of its WebSocket text frame. */
  readonly text: string;
}

export interface FrameEncoder {
  /** A hub item's frame: the same whenever it is asked for (live, replayed, in `/hydrate`, after a restart). */
  encode(item: SequencedEvent): EncodedFrame;
  /**
   * Before `encode` is given frames of a conversation from before this process (read from the store
   * after a restart): learns their model messages from the stored log, once per conversation.
   */
  prepare(convId: string, items: readonly SequencedEvent[]): Promise<void>;
  dispose(): void;
}

/** Conversations and runs per conversation whose model messages are remembered (a few objects a run). */
const CONVERSATION_MEMORY = 10_000;
const RUN_MEMORY = 1_000;
/** Frames read from the store per query while learning a conversation's past. */
const LEARN_PAGE = 10_000;

/** A run's model messages, oldest first, and the number its next one gets. */
interface RunMessages {
  next: number;
  messages: Message[];
}

interface ConversationMessages {
  /**
   * The first seq learned as it was committed (Infinity until one is); the frames before it are
   * learned from the store.
   */
  liveFrom: number;
  runs: Map<string, RunMessages>;
  /** Set once the frames before `liveFrom` are learned (or being learned). */
  past?: Promise<void>;
  /**
   * The newest seq learned from the store: with several instances a frame can be committed (and read
   * there) before it arrives here live, and must not be learned twice.
   */
  pastUpTo?: number;
}

/**
 * Follows the committed frames from the first one, in hub order (it subscribes before any client),
 * to learn which model message each `llm.*` frame belongs to: the run's inferences in order, each from
 * the seq of its `inference-started` (a run resumed after a restart goes on after the inferences it had
 * done). So any frame encodes the same later as it did live, and nothing is kept per frame. After a
 * restart, the frames of before are learned the same way from the store when first needed.
 */
export function createFrameEncoder(frames$: Observable<SequencedEvent>, store: Pick<Store<FrameEvent>, 'frames'>): FrameEncoder {
  const conversations = new Map<string, ConversationMessages>();
  const context: FrameContext = {
    messageOf: (convId, inferenceId, seq) => lastAtOrBefore(conversations.get(convId)?.runs.get(inferenceId)?.messages ?? [], seq),
  };

  // A throw here would be rethrown asynchronously by RxJS and end the process: this cannot fail.
  const subscription: Subscription = frames$.subscribe((item) => {
    const convId = item.event.conv_id;
    const known = conversations.get(convId);
    if (known?.pastUpTo !== undefined && item.seq <= known.pastUpTo) return;
    // Known only from the store so far: what is committed from now on is learned here, not there.
    if (known?.liveFrom === Number.POSITIVE_INFINITY) known.liveFrom = item.seq;
    if (!known) {
      const first: ConversationMessages = { liveFrom: item.seq, runs: new Map() };
      learn(first.runs, item);
      remember(conversations, convId, first, CONVERSATION_MEMORY);
      // Refreshed by message, not by frame (a map write per model message): as runs are.
    } else if (learn(known.runs, item)) remember(conversations, convId, known, CONVERSATION_MEMORY);
  });

  const learnPast = async (convId: string, known: ConversationMessages): Promise<void> => {
    const runs = new Map<string, RunMessages>();
    // `liveFrom` is read again after each page: frames committed meanwhile were learned live.
    for (let since = 0; since < known.liveFrom - 1; ) {
      const limit = Math.min(LEARN_PAGE, known.liveFrom - 1 - since);
      const { frames } = await store.frames(convId, { since_seq: since, limit });
      for (const item of frames) {
        if (item.seq >= known.liveFrom) break;
        learn(runs, item as SequencedEvent);
        known.pastUpTo = item.seq;
      }
      const last = frames[frames.length - 1];
      if (!last || frames.length < limit) break;
      since = last.seq;
    }
    // What was learned live comes after: a resumed run's messages go on from its past ones.
    for (const [inferenceId, live] of known.runs) {
      const past = runs.get(inferenceId);
      runs.set(inferenceId, past ? { next: live.next, messages: [...past.messages, ...live.messages] } : live);
    }
    known.runs = runs;
  };

  return {
    encode: (item) => encodeFrame(item, context),
    prepare: (convId, items) => {
      let known = conversations.get(convId);
      if (!known) remember(conversations, convId, (known = { liveFrom: Number.POSITIVE_INFINITY, runs: new Map() }), CONVERSATION_MEMORY);
      const liveFrom = known.liveFrom;
      if (known.liveFrom <= 1 || !items.some((item) => item.seq < liveFrom)) return Promise.resolve();
      // Once per conversation; a failed read is tried again by the next caller.
      known.past ??= learnPast(convId, known).catch((error: unknown) => {
        if (known) delete known.past;
        throw error;
      });
      return known.past;
    },
    dispose: () => subscription.unsubscribe(),
  };
}

/**
 * Learns one frame, in seq order: a run's model messages are numbered 1, 2, … in its order of
 * inference. True when the frame taught it something (a message began, a run resumed).
 */
function learn(runs: Map<string, RunMessages>, { seq, event }: SequencedEvent): boolean {
  const resumedAfter = resumedIteration(event);
  if (event.type !== 'inference-started' && resumedAfter === undefined) return false;
  let run = runs.get(event.inference_id);
  if (run) remember(runs, event.inference_id, run, RUN_MEMORY);
  else remember(runs, event.inference_id, (run = { next: 1, messages: [] }), RUN_MEMORY);
  if (resumedAfter !== undefined) run.next = resumedAfter + 1;
  if (event.type === 'inference-started') {
    run.messages.push({ seq, id: `${event.inference_id}:${run.next}`, model: event.model });
    run.next += 1;
  }
  return true;
}

/** Newest last: what is forgotten first is what was used longest ago. */
function remember<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > limit) map.delete(map.keys().next().value as string);
}

/** The last message started at or before `seq` (binary search: they are in seq order). */
function lastAtOrBefore(runMessages: readonly Message[], seq: number): Message | undefined {
  let low = 0;
  let high = runMessages.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((runMessages[mid] as Message).seq <= seq) low = mid + 1;
    else high = mid;
  }
  return runMessages[low - 1];
}

/** Serializes one frame. */
export function encodeFrame(item: SequencedEvent, context: FrameContext): EncodedFrame {
  const frame = toSemFrame(item, context);
  try {
    return { frame, text: JSON.stringify(frame) };
  } catch {
    // Tool results are whatever a tool returned: a BigInt or a cycle must not take the server down.
    const text = toJsonText(frame);
    return { frame: JSON.parse(text) as SemFrame, text };
  }
}
