import type { Observable, Subscription } from 'rxjs';
import type { FrameEvent, Store, WireFrame } from '../core/store.js';
import { resumedIteration } from '../sessions/recovery.js';
import type { SequencedEvent } from '../streams/events.js';
import { encodeFrame, textOfFrame, type EncodedFrame, type LogFrame } from '../streams/frame-codec.js';
import type { FrameContext, Message, SemFrame } from './sem-frames.js';
import { keepNewest } from '../core/bounded-map.js';

export { encodeFrame, type EncodedFrame } from '../streams/frame-codec.js';

export interface FrameEncoder {
  /** A frame as JSON-safe data and its text: the same whenever it is asked for (live, replayed, in `/hydrate`, after a restart). */
  encode(item: LogFrame): EncodedFrame;
  /**
   * A frame's wire text: the one it was stored or sent with when it has one (src/streams/frame-codec.ts),
   * else made here once and kept on the item.
   */
  textOf(item: LogFrame): string;
  /**
   * Before `encode` is given frames of a conversation from before this process (read from the store
   * after a restart): learns their model messages from the stored log, once per conversation.
   */
  prepare(convId: string, items: readonly LogFrame[]): Promise<void>;
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

type FrameReads = Pick<Store<FrameEvent, WireFrame>, 'frames' | 'durable'>;

/**
 * A JSON reply `{...head, frames: [...], last_seq}` written around the frames' texts: the very bytes
 * the WebSocket sent, spliced in rather than parsed and encoded again (`/hydrate`).
 */
export function framesReply(head: Readonly<Record<string, string>>, texts: readonly string[], lastSeq: number): string {
  return `${JSON.stringify(head).slice(0, -1)},"frames":[${texts.join(',')}],"last_seq":${lastSeq}}`;
}

/**
 * Follows the committed frames from the first one, in hub order (it subscribes before any client),
 * to learn which model message each `llm.*` frame belongs to: the run's inferences in order, each from
 * the seq of its `inference-started` (a run resumed after a restart goes on after the inferences it had
 * done). So any frame encodes the same later as it did live, and nothing is kept per frame. After a
 * restart, the frames of before are learned the same way from the store when first needed.
 */
export function createFrameEncoder(frames$: Observable<SequencedEvent>, store: FrameReads): FrameEncoder {
  const conversations = new Map<string, ConversationMessages>();
  const context: FrameContext = {
    messageOf: (convId, inferenceId, seq) => lastAtOrBefore(conversations.get(convId)?.runs.get(inferenceId)?.messages ?? [], seq),
  };
  // A durable store's frames all carry the text they were committed with (frame-codec.ts), so nothing
  // needs learning live: remembering 10 000 conversations' messages would only cost the server memory.
  const subscription = store.durable ? undefined : followLive(frames$, conversations);
  return {
    encode: (item) => (item.event ? encodeFrame(item, context) : { frame: JSON.parse(item.text) as SemFrame, text: item.text }),
    textOf: (item) => textOfFrame(item, context),
    prepare: (convId, items) => prepareConversation(store, conversations, convId, items),
    dispose: () => subscription?.unsubscribe(),
  };
}

/** Learns every committed frame of this process as it comes. */
function followLive(frames$: Observable<SequencedEvent>, conversations: Map<string, ConversationMessages>): Subscription {
  // A throw here would be rethrown asynchronously by RxJS and end the process: this cannot fail.
  return frames$.subscribe((item) => {
    const convId = item.event.conv_id;
    const known = conversations.get(convId);
    if (known?.pastUpTo !== undefined && item.seq <= known.pastUpTo) return;
    // Known only from the store so far: what is committed from now on is learned here, not there.
    if (known?.liveFrom === Number.POSITIVE_INFINITY) known.liveFrom = item.seq;
    if (!known) {
      const first: ConversationMessages = { liveFrom: item.seq, runs: new Map() };
      learn(first.runs, item);
      keepNewest(conversations, convId, first, CONVERSATION_MEMORY);
      // Refreshed by message, not by frame (a map write per model message): as runs are.
    } else if (learn(known.runs, item)) keepNewest(conversations, convId, known, CONVERSATION_MEMORY);
  });
}

/**
 * Learns a conversation's past from the store before frames of it without their text are encoded;
 * frames that have their text (all the runtime stores now) need nothing learned.
 */
function prepareConversation(store: FrameReads, conversations: Map<string, ConversationMessages>, convId: string, items: readonly LogFrame[]): Promise<void> {
  let known = conversations.get(convId);
  if (!known) keepNewest(conversations, convId, (known = { liveFrom: Number.POSITIVE_INFINITY, runs: new Map() }), CONVERSATION_MEMORY);
  const liveFrom = known.liveFrom;
  if (known.liveFrom <= 1 || !items.some((item) => item.seq < liveFrom && item.text === undefined)) return Promise.resolve();
  // Once per conversation; a failed read is tried again by the next caller.
  const learning = known;
  learning.past ??= learnPast(store, convId, learning).catch((error: unknown) => {
    delete learning.past;
    throw error;
  });
  return learning.past;
}

async function learnPast(store: FrameReads, convId: string, known: ConversationMessages): Promise<void> {
  const runs = new Map<string, RunMessages>();
  // `liveFrom` is read again after each page: frames committed meanwhile were learned live.
  for (let since = 0; since < known.liveFrom - 1; ) {
    const limit = Math.min(LEARN_PAGE, known.liveFrom - 1 - since);
    const { frames } = await store.frames(convId, { since_seq: since, limit });
    for (const item of frames) {
      if (item.seq >= known.liveFrom) break;
      if (item.event) learn(runs, item as SequencedEvent);
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
}

/**
 * Learns one frame, in seq order: a run's model messages are numbered 1, 2, … in its order of
 * inference. True when the frame taught it something (a message began, a run resumed).
 */
function learn(runs: Map<string, RunMessages>, { seq, event }: SequencedEvent): boolean {
  const resumedAfter = resumedIteration(event);
  if (event.type !== 'inference-started' && resumedAfter === undefined) return false;
  let run = runs.get(event.inference_id);
  if (run) keepNewest(runs, event.inference_id, run, RUN_MEMORY);
  else keepNewest(runs, event.inference_id, (run = { next: 1, messages: [] }), RUN_MEMORY);
  if (resumedAfter !== undefined) run.next = resumedAfter + 1;
  if (event.type === 'inference-started') {
    run.messages.push({ seq, id: `${event.inference_id}:${run.next}`, model: event.model });
    run.next += 1;
  }
  return true;
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
