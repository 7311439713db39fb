import { LISTING_TIMEOUT_MS } from './collect.js';
import { mayHaveApplied, sendRetrying, sleep, type Outcome } from './http.js';
import type { Rng } from './rng.js';
import type { Service } from './service.js';

/** A pause as `GET /debug/pauses` lists it (docs/protocol.md, "The pause object"). */
export interface ListedPause {
  readonly pause_id: string;
  readonly conv_id: string;
  readonly phase: 'after_inference' | 'after_tools';
  readonly tool_calls?: readonly { readonly id: string; readonly name: string; readonly input: Record<string, unknown> }[];
}

export type Action = 'continue' | 'deny' | 'edit';

/** A body of `POST /debug/continue`. */
export interface DecisionBody {
  readonly pause_id: string;
  readonly conv_id: string;
  readonly action: Action;
  readonly tool_call_ids?: readonly string[];
  readonly reason?: string;
  readonly edits?: Readonly<Record<string, Record<string, unknown>>>;
}

/** One operator's attempt to decide one pause, with every exchange it took. */
export interface Decision {
  readonly pause: ListedPause;
  readonly body: DecisionBody;
  readonly attempts: readonly Outcome[];
  /** 200; 409 `pause_resolved`; anything else final (or the retry budget spent). */
  readonly result: 'acknowledged' | 'refused' | 'unexpected';
  /** Owner of the conversation as the harness knew it when the decision was first sent. */
  readonly ownerAtSend: number | undefined;
}

export interface OperatorsConfig {
  readonly service: Service;
  readonly operators: number;
  readonly raceRate: number;
  readonly rng: Rng;
  readonly onRetry: (cause: string) => void;
  readonly signal?: AbortSignal;
}

/** How often the pause feed lists the service's pauses, ms. */
const FEED_INTERVAL_MS = 250;
/**
 * How many pauses one listing asks for, soonest deadline first (the inbox, docs/protocol.md): as an
 * approver's inbox shows a screenful, not 100 000, and enough to keep every operator busy.
 */
const FEED_LIMIT = 2000;
/** How long one decision is retried (503s, a killed instance) before it counts as unanswered, ms. */
const DECISION_BUDGET_MS = 30_000;
/** A pause whose decisions keep failing is handed out at most this often. */
const MAX_DISPATCHES = 5;

/**
 * The operators: a feed lists pending pauses (`GET /pauses?limit=` on a random instance) and hands
 * each new one to one of `operators` concurrent workers, which decides it on a random instance:
 * at `after_inference` 60% continue, 20% deny, 20% edit; at `after_tools` continue (the only action
 * there besides a result edit). A share (`raceRate`) of pauses goes to two workers at once, so one of
 * them must lose with 409 `pause_resolved`. A pause an operator got a 200 for is never handed out
 * again, even when a stale listing still shows it: its still being pending at the end is the finding.
 */
export function startOperators(config: OperatorsConfig) {
  const { service, rng } = config;
  const pauses = new Map<string, ListedPause>();
  const decisions: Decision[] = [];
  const dispatches = new Map<string, number>();
  /** Pauses with a decision on its way, or acknowledged: not handed out again. */
  const handedOut = new Set<string>();
  const acknowledged = new Set<string>();
  const queue: ListedPause[] = [];
  const wakers: (() => void)[] = [];
  let inFlight = 0;
  let stopped = false;
  let lastProgress = Date.now();

  const hand = (pause: ListedPause): void => {
    queue.push(pause);
    wakers.shift()?.();
  };
  const take = async (): Promise<ListedPause | undefined> => {
    while (queue.length === 0 && !stopped) await new Promise<void>((wake) => wakers.push(wake));
    return queue.shift();
  };

  const offer = (pause: ListedPause): void => {
    if (!pauses.has(pause.pause_id)) {
      pauses.set(pause.pause_id, pause);
      lastProgress = Date.now();
    }
    const count = dispatches.get(pause.pause_id) ?? 0;
    if (handedOut.has(pause.pause_id) || count >= MAX_DISPATCHES) return;
    handedOut.add(pause.pause_id);
    dispatches.set(pause.pause_id, count + 1);
    hand(pause);
    if (rng() < config.raceRate) hand(pause);
  };

  const feed = async (): Promise<void> => {
    while (!stopped) {
      const attempts = await sendRetrying(service, 'GET', `/pauses?limit=${FEED_LIMIT}`, undefined, { budgetMs: 5000, timeoutMs: LISTING_TIMEOUT_MS, onRetry: config.onRetry, ...signalOf(config) });
      const last = attempts.at(-1);
      if (last?.status === 200) for (const pause of (last.body as { pauses: ListedPause[] }).pauses) offer(pause);
      // A listing may take an instance's time (100 000 pauses without a limit took seconds): the feed takes at most a third of it.
      await sleep(Math.max(FEED_INTERVAL_MS, 2 * (last?.ms ?? 0)));
    }
  };

  const operator = async (): Promise<void> => {
    for (let pause = await take(); pause && !stopped; pause = await take()) {
      inFlight += 1;
      try {
        const decision = await decide(pause);
        decisions.push(decision);
        if (decision.result === 'acknowledged') {
          acknowledged.add(pause.pause_id);
          lastProgress = Date.now();
        } else if (decision.result === 'unexpected' && !acknowledged.has(pause.pause_id)) {
          // Free to be handed out again when a later listing still shows it.
          handedOut.delete(pause.pause_id);
        }
      } finally {
        inFlight -= 1;
      }
    }
  };

  const decide = async (pause: ListedPause): Promise<Decision> => {
    const body = chooseDecision(pause, rng);
    const ownerAtSend = service.owners.get(pause.conv_id);
    const attempts = await sendRetrying(service, 'POST', '/debug/continue', body, {
      budgetMs: DECISION_BUDGET_MS,
      onRetry: config.onRetry,
      first: service.pick(),
      ...signalOf(config),
    });
    const last = attempts.at(-1);
    const result = last?.status === 200 ? 'acknowledged' : last?.status === 409 && last.body?.error?.code === 'pause_resolved' ? 'refused' : 'unexpected';
    return { pause, body, attempts, result, ownerAtSend };
  };

  // A bug of the harness itself (none is expected) is kept and thrown by `stop`, not left unhandled.
  const failures: unknown[] = [];
  const running = [feed(), ...Array.from({ length: config.operators }, operator)].map((loop) => loop.catch((error: unknown) => void failures.push(error)));
  return {
    pauses,
    decisions,
    acknowledgedCount: () => acknowledged.size,
    /** Whether nothing is waiting or being decided now. */
    idle: () => queue.length === 0 && inFlight === 0,
    lastProgress: () => lastProgress,
    /** Marks progress seen elsewhere (a run ending), so the harness keeps waiting. */
    touch: () => (lastProgress = Date.now()),
    stop: async (): Promise<void> => {
      stopped = true;
      queue.length = 0;
      for (const wake of wakers.splice(0)) wake();
      await Promise.all(running);
      if (failures.length > 0) throw failures[0];
    },
  };
}

export type Operators = ReturnType<typeof startOperators>;

/** What one operator decides for a pause; edits name the conversation and pause, so they are recognisable wherever they ran. */
export function chooseDecision(pause: ListedPause, rng: Rng): DecisionBody {
  const base = { pause_id: pause.pause_id, conv_id: pause.conv_id };
  const calls = pause.tool_calls ?? [];
  const roll = rng();
  if (pause.phase === 'after_tools' || calls.length === 0 || roll < 0.6) return { ...base, action: 'continue' };
  if (roll < 0.8) {
    // Half the time one call of a round with several: the others must still run.
    const one = calls.length > 1 && rng() < 0.5 ? [calls[Math.floor(rng() * calls.length)]?.id as string] : undefined;
    return { ...base, action: 'deny', reason: `soak ${pause.pause_id}`, ...(one ? { tool_call_ids: one } : {}) };
  }
  const tag = `edited ${pause.conv_id} ${pause.pause_id}`;
  const edits = Object.fromEntries(calls.map((call) => [call.id, 'key' in call.input ? { key: tag } : { ...call.input, note: tag }]));
  return { ...base, action: 'edit', edits };
}

/** Whether an attempt before the last may have been applied though its answer was lost. */
export const hadAmbiguousAttempt = (decision: Decision): boolean => decision.attempts.slice(0, -1).some(mayHaveApplied);

const signalOf = (config: { signal?: AbortSignal }): { signal?: AbortSignal } => (config.signal ? { signal: config.signal } : {});
