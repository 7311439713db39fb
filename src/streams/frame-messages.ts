import { keepNewest } from '../core/bounded-map.js';
import { messageId } from '../core/message-ids.js';
import type { FrameEvent, Store, WireFrame } from '../core/store.js';
import type { SequencedEvent, StepwiseEvent } from './events.js';
import type { FrameContext, Message } from './sem-frames.js';

/** Of a frame to encode: its seq, and its text when it was stored or sent with one. */
type FrameToEncode = { readonly seq: number; readonly text?: string | undefined };

/** The store's reads a memory learns a conversation's past from. */
export type FrameReads = Pick<Store<FrameEvent, WireFrame>, 'frames' | 'durable'>;

/**
 * Which model message each `llm.*` frame belongs to (its id, when the event does not carry it, and its
 * model), learned from the frames in seq order: a run's inferences in order, each from the seq of its
 * `inference-started`, a run resumed after a restart going on after the inferences it had done. Nothing
 * is kept per frame, so a frame encodes the same whenever it is encoded.
 */
export interface MessageMemory {
  /** Learns one frame. Frames must come in hub order, each once. Never throws. */
  learn(item: SequencedEvent): void;
  readonly context: FrameContext;
  /**
   * Before frames of a conversation from before this process (without their text) are encoded: learns
   * their model messages from the store, once per conversation.
   */
  prepare(convId: string, items: readonly FrameToEncode[]): Promise<void>;
}

export interface MessageMemoryConfig {
  /** Where the frames of before this process are read. Default: nowhere, and `prepare` learns nothing. */
  readonly store?: FrameReads;
  /**
   * Whether a run's earlier messages are kept, for frames encoded later than live. False when every
   * frame is encoded as it is learned (the frame log's codec): a run's newest message is all it needs.
   */
  readonly keepPast: boolean;
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
  /** The first seq learned live (Infinity until one is); the frames before it are learned from the store. */
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

export function createMessageMemory(config: MessageMemoryConfig): MessageMemory {
  const conversations = new Map<string, ConversationMessages>();
  const { keepPast } = config;
  return {
    learn: (item) => {
      const convId = item.event.conv_id;
      const known = conversations.get(convId);
      if (known?.pastUpTo !== undefined && item.seq <= known.pastUpTo) return;
      // Encoded as they come: nothing of a run is encoded after its end, so nothing of it is kept. Nor
      // while it waits at a pause (often hibernated, for days): its inference has streamed every frame, and
      // the next one's frames carry their message id and model (src/operators/inference.ts).
      if (!keepPast && (item.event.type === 'run-ended' || item.event.type === 'paused')) return forgetRun(conversations, convId, item.event.inference_id);
      // Known only from the store so far: what comes from now on is learned here, not there.
      if (known?.liveFrom === Number.POSITIVE_INFINITY) known.liveFrom = item.seq;
      if (!known) {
        const first: ConversationMessages = { liveFrom: item.seq, runs: new Map() };
        learn(first.runs, item, keepPast);
        keepNewest(conversations, convId, first, CONVERSATION_MEMORY);
        // Refreshed by message, not by frame (a map write per model message), as runs are.
      } else if (learn(known.runs, item, keepPast)) keepNewest(conversations, convId, known, CONVERSATION_MEMORY);
    },
    context: {
      messageOf: (convId, inferenceId, seq) => lastAtOrBefore(conversations.get(convId)?.runs.get(inferenceId)?.messages ?? [], seq),
    },
    prepare: (convId, items) => (config.store ? prepareConversation(config.store, conversations, convId, items) : Promise.resolve()),
  };
}

function forgetRun(conversations: Map<string, ConversationMessages>, convId: string, inferenceId: string): void {
  const known = conversations.get(convId);
  if (!known) return;
  known.runs.delete(inferenceId);
  if (known.runs.size === 0) conversations.delete(convId);
}

/**
 * The iteration a run resumed after, from the `log` frame a run resumed after a restart, a takeover or
 * waking publishes first (src/sessions/recovery.ts): its next inference is the one after.
 */
export function resumedIteration(event: StepwiseEvent): number | undefined {
  if (event.type !== 'log' || event.fields?.['resumed'] !== true) return undefined;
  const iteration = event.fields['iteration'];
  return typeof iteration === 'number' ? iteration : undefined;
}

/**
 * Learns a conversation's past from the store before frames of it without their text are encoded;
 * frames that have their text (every durable store's) need nothing learned.
 */
function prepareConversation(store: FrameReads, conversations: Map<string, ConversationMessages>, convId: string, items: readonly FrameToEncode[]): Promise<void> {
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
      if (item.event) learn(runs, item as SequencedEvent, true);
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
function learn(runs: Map<string, RunMessages>, { seq, event }: SequencedEvent, keepPast: boolean): boolean {
  const resumedAfter = resumedIteration(event);
  if (event.type !== 'inference-started' && resumedAfter === undefined) return false;
  let run = runs.get(event.inference_id);
  if (run) keepNewest(runs, event.inference_id, run, RUN_MEMORY);
  else keepNewest(runs, event.inference_id, (run = { next: 1, messages: [] }), RUN_MEMORY);
  if (resumedAfter !== undefined) run.next = resumedAfter + 1;
  if (event.type === 'inference-started') {
    const message: Message = { seq, id: messageId(event.inference_id, run.next), model: event.model };
    if (keepPast) run.messages.push(message);
    else run.messages = [message];
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
