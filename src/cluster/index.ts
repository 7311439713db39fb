/**
 * One service on many instances (docs/protocol.md, Several instances): the adapters an instance
 * plugs under the runtime when its store is Redis. See src/store/redis/index.ts for the key layout.
 * - Ownership (./ownership.ts): one heartbeat per instance, a lease per run holding the owner's
 *   fencing token, which every write of the run carries (the store refuses it otherwise).
 * - Commands (./commands.ts): the command port over pub/sub, so a command reaches the run's owner.
 * - Frames (./cluster-frames.ts): the frame source a WebSocket follows, wherever the run executes.
 * - Directory (./directory.ts): the conversations and pauses the read routes show, the service's.
 * - Failover (./orphans.ts): runs whose owner died are taken over.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Observable } from 'rxjs';
import type { RunOwnership } from '../core/ownership.js';
import type { FrameEvent, Store, StoredFrame } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { ServiceStore } from '../sessions/service.js';
import type { StoreFence } from '../store/redis/redis-store.js';
import { adoptConversation } from './adopt.js';
import { createClusterFrames } from './cluster-frames.js';
import { createClusterCommands } from './commands.js';
import { watchForOrphans } from './orphans.js';
import { createOwnership } from './ownership.js';
import { createServiceDirectory } from './directory.js';
import { createPauseIndex } from './pause-index.js';
import { createServicePauseFeed } from './pause-feed.js';

/** The store an instance of a service shares with the others (the Redis store). */
export interface ClusterStore extends Store<FrameEvent> {
  tail$(convId: string, sinceSeq?: number): Observable<StoredFrame>;
  /** The conversation of any pause of the service, pending or resolved. */
  convOfPause(pauseId: string): Promise<string | undefined>;
  readonly keys: { readonly prefix: string; readonly checkpoints: string; conversation(convId: string): { readonly lease: string; readonly epoch: string } };
  /** Fences a run's writes with the token its owner holds (see `RedisStore.fence`). */
  fence(fence: StoreFence): void;
}

export interface ClusterConfig {
  readonly store: ClusterStore;
  /** The Redis every instance shares (the store's). */
  readonly redisUrl: string;
  /** `--lease-ms`: how long an instance lives without a heartbeat. Default 5000. */
  readonly leaseMs?: number;
  /** How long a command delivered to the owner waits for its answer before a 503, ms. Default 2000. */
  readonly replyTimeoutMs?: number;
  /** Where takeovers and lost runs are told (the CLI's stdout). Default: nowhere. */
  readonly log?: (line: string) => void;
}

/** A runtime joined to its service. */
export interface ClusterRuntime {
  readonly instanceId: string;
  /**
   * The runtime as an instance of the service: its `frames` follow every instance's frames, its
   * `directory` lists the service's conversations and pauses (./directory.ts), its `commands` reach
   * the run's owner (./commands.ts).
   */
  readonly stepwise: Stepwise;
  /** The ownership port the runtime was made with: takes the conversation's lease, then joins it. */
  readonly ownership: RunOwnership;
}

/**
 * The Redis store as the store of a service: a runtime made on it (`createStepwise({ store })`) joins
 * the service as one instance of it.
 */
export function asServiceStore<S extends ClusterStore>(store: S, config: Omit<ClusterConfig, 'store'>): S & ServiceStore {
  return Object.assign(store, { joinService: (base: Stepwise) => joinCluster(base, { ...config, store }) });
}

export function joinCluster(base: Stepwise, config: ClusterConfig): ClusterRuntime {
  const { store } = config;
  const instanceId = `inst_${randomBytes(6).toString('hex')}`;
  const leaseMs = config.leaseMs ?? 5000;
  // Loaded only when an instance joins a service: the server imports this module for every store, and
  // ioredis took about 0.2 s of each start (`restart_recover`, SQLite's included), as in ../store/redis/connection.ts.
  const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const connect = (): Redis => {
    const connection = new RedisClient(config.redisUrl, { maxRetriesPerRequest: 0, retryStrategy: (times) => Math.min(50 * times, 1000) });
    connection.on('error', () => undefined);
    return connection;
  };
  const redis = connect();
  // Its own connection: a heartbeat never waits behind other commands.
  const heartbeat = connect();
  const log = config.log ?? (() => undefined);
  const runningHere = (): string[] => base.sessions.list().filter((session) => session.running).map((session) => session.conv_id);
  const ownership = createOwnership(redis, heartbeat, {
    instanceId,
    leaseMs,
    keysOf: (convId) => store.keys.conversation(convId),
    heartbeatKey: { before: `${store.keys.prefix}instance:{`, after: '}:alive' },
    running: runningHere,
    beforeRelease: () => store.flush(),
    onLost: (convId) => {
      if (base.sessions.relinquish(convId)) log(`cluster: another instance owns the run of ${convId} now (this one stalled past its lease); its run stopped here`);
    },
  });
  // A refused write means another instance owns the run: it stops here at once, before anyone
  // waiting on that write hears of it (no 200, no tool, no frame).
  store.fence({
    tokenOf: ownership.tokenOf,
    onRefused: (convId) => {
      ownership.drop(convId);
      if (base.sessions.relinquish(convId)) log(`cluster: the store refused a write of ${convId} (another instance owns its run now); its run stopped here`);
    },
  });
  const frames = createClusterFrames(base.frames, base.hub, store, (convId, sinceSeq) => store.tail$(convId, sinceSeq));
  const pauses = createPauseIndex(frames.relayed$);
  const pauseFeed = createServicePauseFeed({ instanceId, local$: base.directory.pauseFrames$, publisher: redis, subscriber: connect(), channel: `${store.keys.prefix}pauses` });
  const join = (convId: string): Promise<void> => adoptConversation(stepwise, store, convId);
  let orphans: { dispose(): void } | undefined;
  let commands: ReturnType<typeof createClusterCommands> | undefined;
  const stop = (): void => {
    pauses.dispose();
    pauseFeed.dispose();
    orphans?.dispose();
    commands?.dispose();
    void ownership.dispose().finally(() => {
      redis.disconnect();
      heartbeat.disconnect();
    });
  };
  /** Runs whose owner lives are its own: recovery brings back only the ones this instance takes. */
  const claimAll = async (convIds: readonly string[]): Promise<ReadonlySet<string>> => {
    const taken = await Promise.all(convIds.map(async (convId) => ((await ownership.acquire(convId)) ? convId : undefined)));
    return new Set(taken.filter((convId): convId is string => convId !== undefined));
  };
  const claim = async (convId: string): Promise<boolean> => {
    const owned = await ownership.acquire(convId);
    // Then the conversation as the store has it: a run another instance ended just before is in it.
    await join(convId);
    return owned;
  };
  const stepwise: Stepwise = {
    ...base,
    frames,
    directory: createServiceDirectory({ stepwise: base, local: base.directory, store, join, pauseFrames$: pauseFeed.frames$ }),
    commands: (handler) => {
      commands = createClusterCommands({
        ownership,
        publisher: redis,
        subscriber: connect(),
        channel: { before: `${store.keys.prefix}instance:{`, after: '}:commands' },
        handler,
        join,
        hasUnfinishedRun: async (convId) => (await store.checkpoints(convId)).length > 0,
        convOfPause: async (pauseId) => base.controller.convOf(pauseId) ?? pauses.convOf(pauseId) ?? (await store.convOfPause(pauseId)),
        replyTimeoutMs: config.replyTimeoutMs ?? 2000,
      });
      return commands;
    },
    recover: async (options = {}) => {
      // Claimed first, read after: from its claim on, nobody else writes a run, so what recovery then
      // loads of it is its latest state. A snapshot read before could be older than a decision its
      // live owner took meanwhile (and the run it ended, its lease released): resumed from it, the
      // run would pause again at a pause already decided. The store first: an unreachable Redis is
      // said in its words (the CLI exits 1 with it).
      const claimed = await claimAll([...new Set((await store.checkpoints()).map((checkpoint) => checkpoint.conv_id))]);
      const report = await base.recover({ ...options, claim: async (convIds) => new Set(convIds.filter((convId) => claimed.has(convId))) });
      await commands?.ready;
      // From now on this instance also takes over the runs of instances that die.
      orphans ??= watchForOrphans({
        redis,
        checkpointsKey: store.keys.checkpoints,
        ownership,
        intervalMs: Math.min(500, Math.max(50, Math.floor(leaseMs / 4))),
        leaseMs,
        runningHere: () => new Set(runningHere()),
        takeOver: async (convId) => {
          const taken = await base.takeOver(convId, options);
          log(taken.runs > 0 ? `cluster: took over the run of ${convId}${taken.pauses > 0 ? ', paused again' : ''} (its owner stopped)` : `cluster: took over ${convId}: no unfinished run left to resume`);
        },
        onError: (convId, error) => log(`cluster: ${convId ? `taking over ${convId}` : 'looking for orphaned runs'} failed: ${(error as Error).message}`),
      });
      return report;
    },
    dispose: () => {
      base.dispose();
      frames.dispose();
      stop();
    },
    suspend: async () => {
      await base.suspend();
      frames.dispose();
      stop();
    },
  };
  return { instanceId, stepwise, ownership: { claim } };
}

export { createClusterFrames, type FrameTail$ } from './cluster-frames.js';
