import { sleep } from './http.js';
import type { Service } from './service.js';
import type { FailoverSummary } from './types.js';

export interface FaultConfig {
  readonly service: Service;
  readonly kill: boolean;
  readonly redisRestart: boolean;
  readonly redisDownMs: number;
  /** How long a killed instance stays down before it is started again, ms (`restartDelayMs`). */
  readonly restartAfterMs: number;
  /** Decisions acknowledged so far, and how many the soak expects in all: faults strike part-way. */
  readonly progress: () => number;
  readonly expected: number;
  /** Conversations still running now (the owner killed is the one with most); undefined if unknown. */
  readonly running: () => Promise<ReadonlySet<string> | undefined>;
  readonly log: (line: string) => void;
}

export interface FaultResults {
  failover?: Omit<FailoverSummary, 'first_takeover_ms' | 'last_takeover_ms' | 'takeovers'> & { readonly killedAt: number; readonly ownedConvs: readonly string[] };
  redisDownMs?: number;
}

/** Share of the expected decisions after which each fault strikes. */
const KILL_AT = 0.4;
const REDIS_AT = 0.6;
/** How long after the lease lapsed (`--lease-ms` plus 1 s, docs/protocol.md "Durability") the killed instance stays down: long enough to see the others take over. */
const RESTART_SLACK_MS = 1500;

/**
 * How long a killed instance stays down: with Redis, until the others have taken its runs over; with
 * SQLite, not at all (nobody else can take them: a supervisor starts it again on the same data dir).
 */
export const restartDelayMs = (store: 'redis' | 'sqlite', leaseMs: number): number => (store === 'redis' ? leaseMs + RESTART_SLACK_MS : 0);

/**
 * The faults of a soak, each once, part-way through: SIGKILL of the instance owning most open runs
 * (then started again after `restartAfterMs`), and Redis stopped for
 * `redisDownMs` then started on the same port and dir. `done()` ends the waiting when the soak ends
 * first (a fault that never struck is missing from the results).
 */
export function driveFaults(config: FaultConfig): { finished: Promise<FaultResults>; done(): void } {
  let ended = false;
  const results: FaultResults = {};
  const reached = async (share: number): Promise<boolean> => {
    while (!ended && config.progress() < share * config.expected) await sleep(25);
    return !ended;
  };
  const finished = (async (): Promise<FaultResults> => {
    if (config.kill && (await reached(KILL_AT))) results.failover = await killOwner(config);
    if (config.redisRestart && (await reached(REDIS_AT))) results.redisDownMs = await restartRedis(config);
    return results;
  })();
  return { finished, done: () => (ended = true) };
}

async function killOwner(config: FaultConfig): Promise<NonNullable<FaultResults['failover']>> {
  const { service } = config;
  const running = (await config.running()) ?? new Set<string>();
  const owned = (index: number): string[] => [...running].filter((convId) => service.owners.get(convId) === index);
  const instance = service.instances.map((i) => i.index).reduce((best, index) => (owned(index).length > owned(best).length ? index : best), 0);
  const ownedConvs = owned(instance);
  const killedAt = Date.now();
  await service.kill(instance);
  config.log(`fault: SIGKILL instance ${instance} (${ownedConvs.length} open runs); restart in ${config.restartAfterMs} ms`);
  await sleep(config.restartAfterMs);
  await service.restart(instance);
  const restarted = Date.now() - killedAt;
  config.log(`fault: instance ${instance} started again after ${restarted} ms`);
  return { instance, owned_runs: ownedConvs.length, restarted_after_ms: restarted, killedAt, ownedConvs };
}

async function restartRedis(config: FaultConfig): Promise<number> {
  const redis = config.service.redis;
  if (!redis) throw new Error('soak: a Redis restart needs the Redis store');
  const stoppedAt = Date.now();
  await redis.stop();
  config.log(`fault: redis stopped for ${config.redisDownMs} ms`);
  await sleep(Math.max(0, config.redisDownMs - (Date.now() - stoppedAt)));
  await redis.start();
  const down = Date.now() - stoppedAt;
  config.log(`fault: redis back after ${down} ms`);
  return down;
}

/** The failover figures, from the takeover lines the other instances printed after the kill. */
export function summariseFailover(service: Service, failover: NonNullable<FaultResults['failover']>): FailoverSummary {
  const { killedAt, ownedConvs, ...rest } = failover;
  const owned = new Set(ownedConvs);
  // The first takeover of each run it owned: later ones (a Redis outage after the kill) are another story.
  const first = new Map<string, number>();
  for (const t of service.takeovers) {
    if (t.at >= killedAt && t.at <= killedAt + 30_000 && owned.has(t.conv_id) && !first.has(t.conv_id)) first.set(t.conv_id, t.at - killedAt);
  }
  const times = [...first.values()];
  return {
    ...rest,
    first_takeover_ms: times.length > 0 ? Math.min(...times) : null,
    last_takeover_ms: times.length > 0 ? Math.max(...times) : null,
    takeovers: first.size,
  };
}
