import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { COMMIT_WAIT_MS, type CommandHandler } from '../core/commands.js';
import type { RecoverOptions, RecoveryReport } from '../sessions/recovery.js';
import type { Stepwise } from '../sessions/runtime.js';
import { adoptConversation } from './adopt.js';
import { createServiceFrames } from './service-frames.js';
import { createServiceCommands } from './commands.js';
import { merge, type Observable } from 'rxjs';
import type { FrameEvent, Store, StoredFrame } from '../core/store.js';
import type { PausePage } from '../store/redis/pause-deadlines.js';
import type { StoreFence } from '../store/redis/redis-store.js';
import { watchForOrphans } from './orphans.js';
import { createRunLeases, type RunLeases } from './run-leases.js';
import { createServicePauseFeed, type ServicePauseFeed } from './pause-feed.js';
import { createPauseIndex } from './pause-index.js';

/** The store an instance of a service shares with the others (the Redis store). */
export interface InstanceStore extends Store<FrameEvent> {
  tail$(convId: string, sinceSeq?: number): Observable<StoredFrame>;
  /** The conversation of any pause of the service, pending or resolved. */
  convOfPause(pauseId: string): Promise<string | undefined>;
  /** The conversations with an unfinished run, also one whose checkpoint cannot be read back. */
  unfinished(): Promise<string[]>;
  /** The service's pending pauses in deadline order, a page at a time (the inbox's soonest first). */
  pausesByDeadline(offset: number, count: number): Promise<PausePage>;
  readonly keys: { readonly prefix: string; readonly checkpoints: string; conversation(convId: string): { readonly lease: string; readonly epoch: string } };
  /** Fences a run's writes with the token the instance running it holds (see `RedisStore.fence`). */
  fence(fence: StoreFence): void;
  /** Another connection to the store's Redis (see `RedisStore.connect`). */
  connect(): Redis;
}

export interface InstanceConfig {
  readonly store: InstanceStore;
  /** `--lease-ms`: how long an instance lives without a heartbeat. Default 5000. */
  readonly leaseMs?: number;
  /** How long a command delivered to the instance running its conversation waits for its answer before a 503, ms. Default 5000 (the commit wait and a second). */
  readonly replyTimeoutMs?: number;
  /** Where takeovers and lost runs are told (the CLI's stdout). Default: nowhere. */
  readonly log?: (line: string) => void;
}

/** The parts of one instance of a service that `joinService` (./index.ts) joins a runtime through. */
export type ServiceCommands = ReturnType<typeof createServiceCommands>;

/** One instance's connections and the parts its runtime is joined through. */
export interface Instance {
  readonly base: Stepwise;
  readonly store: InstanceStore;
  readonly config: InstanceConfig;
  readonly instanceId: string;
  readonly leaseMs: number;
  readonly log: (line: string) => void;
  /** Commands and the leases' reads and scripts. */
  readonly redis: Redis;
  readonly connect: () => Redis;
  readonly leases: RunLeases;
  readonly frames: ReturnType<typeof createServiceFrames>;
  /** Every instance's pause and resume frames (the inbox across the service, ./pause-feed.ts). */
  readonly pauseFeed: ServicePauseFeed;
  readonly pauses: ReturnType<typeof createPauseIndex>;
  readonly join: (convId: string) => Promise<void>;
  readonly runningHere: () => string[];
  readonly disconnect: () => void;
}

export function connectInstance(base: Stepwise, config: InstanceConfig): Instance {
  const { store } = config;
  const instanceId = `inst_${randomBytes(6).toString('hex')}`;
  const leaseMs = config.leaseMs ?? 5000;
  // The store's own connections, its settings and error policy: one way to reach Redis.
  const connect = (): Redis => store.connect();
  const redis = connect();
  // Its own connection: a heartbeat never waits behind other commands.
  const heartbeat = connect();
  const log = config.log ?? (() => undefined);
  const runningHere = (): string[] => base.sessions.list().filter((session) => session.running).map((session) => session.conv_id);
  const leases = fencedLeases(base, store, { instanceId, leaseMs, log, redis, heartbeat, runningHere });
  const frames = createServiceFrames(base.frames, base.hub, store, (convId, sinceSeq) => store.tail$(convId, sinceSeq));
  const pauseFeed = createServicePauseFeed({
    instanceId,
    local$: base.directory.pauseFrames$,
    publisher: redis,
    subscriber: connect(),
    channel: `${store.keys.prefix}pauses`,
  });
  const instance: Instance = {
    base,
    store,
    config,
    instanceId,
    leaseMs,
    log,
    redis,
    connect,
    leases,
    frames,
    pauseFeed,
    // A continue posted anywhere finds its pause's conversation here first: the pauses this instance's
    // sockets relayed, and every pause the service's feed told of.
    pauses: createPauseIndex(merge(frames.relayed$, pauseFeed.frames$)),
    join: (convId) => adoptConversation(base, store, convId),
    runningHere,
    disconnect: () => {
      redis.disconnect();
      heartbeat.disconnect();
    },
  };
  return instance;
}

/** An instance's heartbeat key, `instance:{<id>}:alive`, as the parts before and after its id. */
const heartbeatKeyOf = (store: InstanceStore): { before: string; after: string } => ({ before: `${store.keys.prefix}instance:{`, after: '}:alive' });
/** The service's instance registry: the SET of every instance that has beaten. */
const registryKeyOf = (store: InstanceStore): string => `${store.keys.prefix}instances`;

/** Leases by heartbeat, and the store's writes fenced with their tokens. */
function fencedLeases(
  base: Stepwise,
  store: InstanceStore,
  parts: { instanceId: string; leaseMs: number; log: (line: string) => void; redis: Redis; heartbeat: Redis; runningHere: () => string[] },
): RunLeases {
  const { log } = parts;
  const leases = createRunLeases(parts.redis, parts.heartbeat, {
    instanceId: parts.instanceId,
    leaseMs: parts.leaseMs,
    keysOf: (convId) => store.keys.conversation(convId),
    heartbeatKey: heartbeatKeyOf(store),
    registryKey: registryKeyOf(store),
    running: parts.runningHere,
    beforeRelease: () => store.flush(),
    onLost: (convId) => {
      if (base.sessions.relinquish(convId)) log(`service: another instance runs ${convId} now (this one stalled past its lease); its run stopped here`);
    },
  });
  // A refused write means another instance runs the conversation now: it stops here at once, before
  // anyone waiting on that write hears of it (no 200, no tool, no frame).
  store.fence({
    tokenOf: leases.tokenOf,
    onRefused: (convId) => {
      leases.drop(convId);
      if (base.sessions.relinquish(convId)) log(`service: the store refused a write of ${convId} (another instance runs it now); its run stopped here`);
    },
  });
  return leases;
}

/** The command port over pub/sub, serving what reaches this instance with `handler`. */
export function commandsOf(instance: Instance, handler: CommandHandler): ServiceCommands {
  const { base, store, pauses } = instance;
  return createServiceCommands({
    leases: instance.leases,
    publisher: instance.redis,
    subscriber: instance.connect(),
    channel: { before: `${store.keys.prefix}instance:{`, after: '}:commands' },
    handler,
    join: instance.join,
    hasUnfinishedRun: async (convId) => (await store.checkpoints(convId)).length > 0,
    convOfPause: async (pauseId) => base.controller.convOf(pauseId) ?? pauses.convOf(pauseId) ?? (await store.convOfPause(pauseId)),
    replyTimeoutMs: instance.config.replyTimeoutMs ?? COMMIT_WAIT_MS + 1000,
  });
}

/**
 * Recovery of the runs this instance takes: claimed first, read after. From its claim on, nobody
 * else writes a run, so what recovery then loads of it is its latest state; a snapshot read before
 * could be older than a decision the live instance running it took meanwhile (and the run it ended,
 * its lease released), and resumed from it the run would pause again at a pause already decided. The
 * store first: an unreachable Redis is said in its words (the CLI exits 1 with it). A run whose checkpoint
 * cannot be read back is claimed too: recovery ends it failed (docs/protocol.md, Durability).
 */
export async function recoverClaimed(instance: Instance, options: RecoverOptions): Promise<RecoveryReport> {
  const convIds = await instance.store.unfinished();
  const taken = await Promise.all(convIds.map(async (convId) => ((await instance.leases.acquire(convId)) ? convId : undefined)));
  const claimed = new Set(taken.filter((convId): convId is string => convId !== undefined));
  return instance.base.recover({ ...options, claim: async (ids) => new Set(ids.filter((convId) => claimed.has(convId))) });
}

/** Failover: the runs of instances that die are taken over here. */
export function watchOrphansOf(instance: Instance, options: RecoverOptions): { dispose(): void } {
  const { base, log, leaseMs } = instance;
  return watchForOrphans({
    redis: instance.redis,
    checkpointsKey: instance.store.keys.checkpoints,
    registryKey: registryKeyOf(instance.store),
    heartbeatKey: heartbeatKeyOf(instance.store),
    leases: instance.leases,
    intervalMs: Math.min(500, Math.max(50, Math.floor(leaseMs / 4))),
    leaseMs,
    runningHere: () => new Set(instance.runningHere()),
    takeOver: async (convId) => {
      const taken = await base.takeOver(convId, options);
      // Ended failed and stored as ended: it is not taken over again at the next look.
      for (const failed of taken.failed ?? []) log(`service: the run ${failed.inference_id} of ${convId} could not be taken over and ended failed: ${failed.error}`);
      if (taken.failed) return;
      log(taken.runs > 0 ? `service: took over the run of ${convId}${taken.pauses > 0 ? ', paused again' : ''} (its instance stopped)` : `service: took over ${convId}: no unfinished run left to resume`);
    },
    onError: (convId, error) => log(`service: ${convId ? `taking over ${convId}` : 'looking for orphaned runs'} failed: ${(error as Error).message}`),
  });
}
