/**
 * The store's key layout under one prefix (default `stepwise:`), so several services (or tests) can
 * share one Redis. Service-wide indexes are single keys, so `load()` at start is a handful of
 * commands; what belongs to one conversation is under `conv:{id}:` (the braces make a cluster hash
 * tag, should the per-conversation keys ever be spread out), so deleting a conversation is one script.
 */
export interface RedisKeys {
  readonly prefix: string;
  /** HASH conv_id -> ConversationRecord JSON. */
  readonly conversations: string;
  /** ZSET conv_id scored by created_at: the oldest-first order. */
  readonly conversationOrder: string;
  /** HASH conv_id -> StepSetting JSON, set by `setStep` (it wins over the record's `step`). */
  readonly steps: string;
  /** HASH conv_id -> the seq of its last frame: the append script checks and advances it. */
  readonly lastSeqs: string;
  /** HASH conv_id -> engine state JSON. */
  readonly engineStates: string;
  /** HASH pause_id -> StoredPause JSON. */
  readonly pauses: string;
  /** ZSET pause_id scored by `counter` at its (last) put: the order pauses were made in. */
  readonly pauseOrder: string;
  /** ZSET pending pause_id scored by its deadline (ms): the inbox's soonest first, a page at a time. */
  readonly pauseDeadlines: string;
  /** HASH pause_id -> conv_id of every pause made, pending or resolved: any instance finds a pause's run. */
  readonly pauseConvs: string;
  /** HASH checkpointField(conv, inference) -> RunCheckpoint JSON. */
  readonly checkpoints: string;
  /** STRING counter, INCR'd to order pauses. */
  readonly counter: string;
  /** A conversation's own keys. */
  conversation(convId: string): ConversationKeys;
}

export interface ConversationKeys {
  /** STREAM of frames, entry id `<seq>-0` and one field `e` (the event JSON): stream order is seq order. */
  readonly frames: string;
  /** HASH turn_id -> blocks JSON. */
  readonly turns: string;
  /** LIST of turn ids, oldest first. */
  readonly turnOrder: string;
  /** LIST of DecisionRecord JSON, oldest first. */
  readonly decisions: string;
  /** SET of pause ids already decided, so a batch sent again after a lost reply records each once. */
  readonly decided: string;
  /** SET of its pause ids in `pauses`. */
  readonly pauses: string;
  /** SET of its fields in `checkpoints`. */
  readonly checkpoints: string;
  /**
   * STRING the token of the instance that runs it, `<instance id>/<epoch>`, no expiry: held while that instance's heartbeat
   * (`instance:{id}:alive`) lives, taken over once it lapsed (see src/service/run-leases.ts).
   */
  readonly lease: string;
  /** STRING counter, INCR'd at each acquisition: a token is never issued twice. */
  readonly epoch: string;
}

export const DEFAULT_KEY_PREFIX = 'stepwise:';

/** The field of one run's checkpoint: unambiguous whatever characters the ids hold. */
export const checkpointField = (convId: string, inferenceId: string): string => JSON.stringify([convId, inferenceId]);

/** The ids a `checkpointField` names; undefined for a field that is not one (written by hand, cut short). */
export function checkpointKeyOf(field: string): { conv_id: string; inference_id: string } | undefined {
  try {
    const ids = JSON.parse(field) as unknown;
    return Array.isArray(ids) && typeof ids[0] === 'string' && typeof ids[1] === 'string' ? { conv_id: ids[0], inference_id: ids[1] } : undefined;
  } catch {
    return undefined;
  }
}

/** The conversation a `checkpointField` names; undefined for a field that is not one. */
export const convOfCheckpointField = (field: string): string | undefined => checkpointKeyOf(field)?.conv_id;

export function createRedisKeys(prefix: string = DEFAULT_KEY_PREFIX): RedisKeys {
  const key = (name: string): string => `${prefix}${name}`;
  return {
    prefix,
    conversations: key('conversations'),
    conversationOrder: key('conversation-order'),
    steps: key('steps'),
    lastSeqs: key('last-seqs'),
    engineStates: key('engine-states'),
    pauses: key('pauses'),
    pauseOrder: key('pause-order'),
    pauseConvs: key('pause-convs'),
    pauseDeadlines: key('pause-deadlines'),
    checkpoints: key('checkpoints'),
    counter: key('counter'),
    conversation: (convId) => {
      const own = (name: string): string => key(`conv:{${convId}}:${name}`);
      return {
        frames: own('frames'),
        turns: own('turns'),
        turnOrder: own('turn-order'),
        decisions: own('decisions'),
        decided: own('decided'),
        pauses: own('pauses'),
        checkpoints: own('checkpoints'),
        lease: own('lease'),
        epoch: own('epoch'),
      };
    },
  };
}
