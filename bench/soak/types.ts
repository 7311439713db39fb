import type { SoakMemory } from './memory.js';

/**
 * The soak harness's options and report (issue 21). The harness is a black box: everything it learns
 * comes from the wire protocol (docs/protocol.md), the processes' stdout and the tools' own log file.
 */

export interface SoakOptions {
  /**
   * `redis` (default): a service of `instances` processes on one redis-server. `sqlite`: one `serve
   * --store sqlite` process on a data dir of its own (the default store), whose kill is followed by a
   * restart on the same dir at once, as a supervisor does; observers then watch from the owner itself.
   */
  readonly store?: 'redis' | 'sqlite';
  /** Conversations, one run each, round-robin over the instances. Default 1000. */
  readonly runs?: number;
  /** `serve` processes on the one Redis. Default 3; always 1 with `store: 'sqlite'`. */
  readonly instances?: number;
  /** Concurrent operators answering pauses. Default 50. */
  readonly operators?: number;
  /** WebSocket observers, each following one conversation on an instance that does not own it. Default 100. */
  readonly observers?: number;
  /** SIGKILL one owner instance mid-way and start it again. Default false. */
  readonly kill?: boolean;
  /** Stop Redis once mid-way for `redisDownMs` and start it again (same port, same dir). Default false. */
  readonly redisRestart?: boolean;
  /** How long Redis stays down with `redisRestart`, ms. Default 2500. */
  readonly redisDownMs?: number;
  /** `--lease-ms` of every instance. Default 2000. */
  readonly leaseMs?: number;
  /** How long each tool execution takes, ms (so a kill can land while one runs). Default 20. */
  readonly toolMs?: number;
  /** Share of pauses handed to two operators at once, to exercise `pause_resolved`. Default 0.05. */
  readonly raceRate?: number;
  /** How long nothing may happen (no new pause, no decision, no run ending) before the harness stops waiting, ms. Default 15000. */
  readonly runEndTimeoutMs?: number;
  /** The whole soak's bound, ms. Default 120 s + 300 ms per run. */
  readonly timeoutMs?: number;
  /** Seed of the operators' choices (timing is not reproducible, choices are). Default random. */
  readonly seed?: number;
  /** Keep the temp dir (servers' logs, the tools' log, the script) instead of removing it. Default false. */
  readonly keepDir?: boolean;
  /** Progress lines (phases, faults); default none. */
  readonly log?: (line: string) => void;
  /** Aborting stops the soak early (every process is stopped); the report says so. */
  readonly signal?: AbortSignal;
}

/** What each kind of violation means is in report.ts (`KIND_LABELS`). */
export type ViolationKind =
  | 'decision_lost'
  | 'acknowledged_twice'
  | 'resolved_twice'
  | 'executed_twice'
  | 'run_not_ended'
  | 'run_ended_otherwise'
  | 'observer_stream'
  | 'stored_log'
  | 'unexpected_reply';

/** One broken promise, with what the harness knows to find it again in the servers' logs. */
export interface Violation {
  readonly kind: ViolationKind;
  readonly conv_id?: string;
  readonly pause_id?: string;
  /** What happened, in one line. */
  readonly detail: string;
}

export interface LatencySummary {
  readonly samples: number;
  readonly median_ms: number;
  readonly p99_ms: number;
}

export interface FailoverSummary {
  /** Which instance was killed (0-based) and how many of the soak's runs it owned then. */
  readonly instance: number;
  readonly owned_runs: number;
  /** From the SIGKILL to the first `service: took over the run of …` line of another instance; null: none seen. */
  readonly first_takeover_ms: number | null;
  /** From the SIGKILL to the last run the killed instance owned being taken over (first line per run, within 30 s). */
  readonly last_takeover_ms: number | null;
  /** Runs of the killed instance that another instance said it took over. */
  readonly takeovers: number;
  /** From the SIGKILL to the restarted instance's ready line. */
  readonly restarted_after_ms: number;
}

export interface SoakReport {
  readonly store: 'redis' | 'sqlite';
  readonly runs: number;
  readonly instances: number;
  readonly seed: number;
  readonly duration_ms: number;
  /** Distinct pause ids seen (listed by /debug/pauses or in the logs). */
  readonly pauses_seen: number;
  /** 200 answers to POST /debug/continue. */
  readonly decisions_acknowledged: number;
  /** 409 `pause_resolved` where another operator had a 200 for the same pause: the expected loser of a race. */
  readonly races_lost: number;
  /** 409 after an own earlier attempt whose answer was lost (503 owner_unavailable, a reset, a timeout). */
  readonly ambiguous_retries: number;
  /** Retried answers by cause (`503 store_unavailable`, `connection refused`, …). */
  readonly retried: Readonly<Record<string, number>>;
  /** WebSocket observers, the sequenced frames they got, and their connections (first, hop, reconnections). */
  readonly observed: { readonly observers: number; readonly frames: number; readonly connections: number };
  /** POST /debug/continue round trips answered 200 at the first attempt, by where they were sent. */
  readonly latency: { readonly forwarded: LatencySummary; readonly at_owner: LatencySummary };
  readonly failover?: FailoverSummary;
  /**
   * Runs taken over (or restarted) past a pause whose decision was committed before their owner
   * stopped and before they went on: the window where a decision would be lost if a takeover paused again.
   */
  readonly resumed_past_decisions: number;
  /** How long Redis was down with `redisRestart` (from stop to answering PING again), ms. */
  readonly redis_down_ms?: number;
  /** Lines the servers wrote to stderr (e.g. `stepwise: unexpected error`); not a violation by itself. */
  readonly server_stderr_lines: number;
  /** The instances' and the harness's resident memory (bench/soak/memory.ts). */
  readonly memory: SoakMemory;
  readonly counts: Readonly<Record<ViolationKind, number>>;
  readonly violations: readonly Violation[];
  /** The kept temp dir (`keepDir`), with each instance's stdout/stderr and the tools' log. */
  readonly dir?: string;
  /** Set when the soak stopped early (its time bound, an abort): the checks still ran on what there was. */
  readonly stopped_early?: string;
}

type Defaulted = Required<Omit<SoakOptions, 'timeoutMs' | 'seed' | 'log' | 'signal'>>;

export const SOAK_DEFAULTS: Readonly<Defaulted> = Object.freeze({
  store: 'redis',
  runs: 1000,
  instances: 3,
  operators: 50,
  observers: 100,
  kill: false,
  redisRestart: false,
  redisDownMs: 2500,
  leaseMs: 2000,
  toolMs: 20,
  raceRate: 0.05,
  runEndTimeoutMs: 15_000,
  keepDir: false,
});

export type ResolvedSoakOptions = Readonly<Defaulted> & { readonly timeoutMs: number; readonly seed: number; readonly log: (line: string) => void; readonly signal?: AbortSignal };

/** Defaults filled in; bad values fail here, naming the option. */
export function resolveSoakOptions(options: SoakOptions): ResolvedSoakOptions {
  const given = { ...SOAK_DEFAULTS, ...stripUndefined(options) };
  if (given.store !== 'redis' && given.store !== 'sqlite') throw new RangeError(`soak: store must be "redis" or "sqlite", got "${String(given.store)}"`);
  if (given.store === 'sqlite' && given.redisRestart) throw new RangeError('soak: redisRestart needs store "redis"');
  if (given.store === 'sqlite' && options.instances !== undefined && options.instances !== 1) throw new RangeError('soak: a SQLite data dir has one instance');
  const merged = given.store === 'sqlite' ? { ...given, instances: 1 } : given;
  const positive = ['runs', 'instances', 'operators', 'leaseMs', 'runEndTimeoutMs'] as const;
  for (const name of positive) {
    if (!Number.isInteger(merged[name]) || merged[name] < 1) throw new RangeError(`soak: ${name} must be a positive integer, got ${merged[name]}`);
  }
  if (merged.store === 'redis' && merged.instances < 2) throw new RangeError('soak: instances must be at least 2 (observers watch from a non-owner)');
  if (!(merged.raceRate >= 0 && merged.raceRate <= 1)) throw new RangeError(`soak: raceRate must be within 0..1, got ${merged.raceRate}`);
  return {
    ...merged,
    observers: Math.min(merged.observers, merged.runs),
    timeoutMs: options.timeoutMs ?? 120_000 + 300 * merged.runs,
    seed: options.seed ?? Math.floor(Math.random() * 2 ** 31),
    log: options.log ?? (() => undefined),
    ...(options.signal ? { signal: options.signal } : {}),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
