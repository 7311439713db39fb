/**
 * One service on many instances (SPEC §7, issue 11): what an instance adds to the runtime when its
 * store is Redis. See src/store/redis/index.ts for the key layout it builds on.
 * - Frames: a WebSocket on any instance follows a conversation through its stream (./cluster-frames.ts).
 * - Ownership: the instance that runs a conversation holds its lease (./lease.ts).
 * - Commands: a request about a run another instance owns is delivered to it over Redis, and its
 *   answer is the reply (./commands.ts, ./cluster-routes.ts).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Router } from 'express';
import type { Observable } from 'rxjs';
import type { FrameEvent, Store, StoredFrame, StoredPause } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';
import { adoptConversation } from './adopt.js';
import { createClusterFrames } from './cluster-frames.js';
import { clusterRoutes } from './cluster-routes.js';
import { createCommands, type ForwardedReply, type ForwardedRequest } from './commands.js';
import { createLeases } from './lease.js';
import { watchForOrphans } from './orphans.js';
import { createPauseIndex } from './pause-index.js';

/** The store an instance of a service shares with the others (the Redis store). */
export interface ClusterStore extends Store<FrameEvent> {
  tail$(convId: string, sinceSeq?: number): Observable<StoredFrame>;
  /** One pending pause of the service by id. */
  pause(pauseId: string): Promise<StoredPause | undefined>;
  readonly keys: { readonly prefix: string; readonly checkpoints: string; conversation(convId: string): { readonly lease: string } };
  /** Refuses from now on a run's writes while another token than this one holds its lease (the fence). */
  fence(token: string): void;
}

export interface ClusterConfig {
  readonly store: ClusterStore;
  /** The Redis every instance shares (the store's). */
  readonly redisUrl: string;
  /** `--lease-ms`. Default 5000. */
  readonly leaseMs?: number;
  /** How long a request delivered to the owner waits for its answer before a 503, ms. Default 5000. */
  readonly replyTimeoutMs?: number;
  /** Where takeovers and lost leases are told (the CLI's stdout). Default: nowhere. */
  readonly log?: (line: string) => void;
}

/** A runtime joined to its service. */
export interface ClusterRuntime {
  readonly instanceId: string;
  /** The runtime, its `frames` following every instance's frames. */
  readonly stepwise: Stepwise;
  /**
   * Makes a conversation another instance created known here (its session, its seq) before a client
   * joins it; nothing when it is new or known already. Rejects when the store cannot be read.
   */
  join(convId: string): Promise<void>;
  /** The routes in front of the single-process ones; `serve` answers what other instances deliver here. */
  routes(debug: boolean, serve: (request: ForwardedRequest) => ForwardedReply | Promise<ForwardedReply>): Router;
}

export function joinCluster(base: Stepwise, config: ClusterConfig): ClusterRuntime {
  const { store } = config;
  const instanceId = `inst_${randomBytes(6).toString('hex')}`;
  // Two instances never both write one run (SPEC §7): once another instance took a lease over, this
  // one's appends and checkpoints for it are refused by Redis, even before its next renewal finds out.
  store.fence(instanceId);
  const leaseMs = config.leaseMs ?? 5000;
  // Loaded only when an instance joins a service: the server imports this module for every store, and
  // ioredis took about 0.2 s of each start (`restart_recover`, SQLite's included), as in ../store/redis/connection.ts.
  const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const connect = (): Redis => new RedisClient(config.redisUrl, { maxRetriesPerRequest: 0, retryStrategy: (times) => Math.min(50 * times, 1000) });
  const redis = connect();
  redis.on('error', () => undefined);
  const frames = createClusterFrames(base.frames, base.hub, store, (convId, sinceSeq) => store.tail$(convId, sinceSeq));
  const pauses = createPauseIndex(frames.events$);
  const log = config.log ?? (() => undefined);
  const runningHere = (): string[] => base.sessions.list().filter((session) => session.running).map((session) => session.conv_id);
  const leases = createLeases(redis, {
    instanceId,
    leaseMs,
    keyOf: (convId) => store.keys.conversation(convId).lease,
    running: runningHere,
    beforeRelease: () => store.flush(),
    onLost: (convId) => {
      if (base.sessions.relinquish(convId)) log(`cluster: lost the lease of ${convId} to another instance; its run stopped here`);
    },
  });
  let commands: ReturnType<typeof createCommands> | undefined;
  let orphans: { dispose(): void } | undefined;
  const stop = (): void => {
    pauses.dispose();
    orphans?.dispose();
    commands?.dispose();
    void leases.dispose().finally(() => redis.disconnect());
  };
  /** Runs whose lease another live instance holds are its own: recovery brings back only the ones whose lease it takes. */
  const claim = async (convIds: readonly string[]): Promise<ReadonlySet<string>> => {
    const taken = await Promise.all(convIds.map(async (convId) => ((await leases.acquire(convId)) ? convId : undefined)));
    return new Set(taken.filter((convId): convId is string => convId !== undefined));
  };
  const stepwise: Stepwise = {
    ...base,
    frames,
    recover: async (options = {}) => {
      const report = await base.recover({ ...options, claim });
      // From now on this instance also takes over the runs of instances that die (SPEC §7 failover).
      orphans ??= watchForOrphans({
        redis,
        checkpointsKey: store.keys.checkpoints,
        leaseKeyOf: (convId) => store.keys.conversation(convId).lease,
        leases,
        intervalMs: Math.min(1000, Math.max(50, Math.floor(leaseMs / 4))),
        runningHere: () => new Set(runningHere()),
        takeOver: async (convId) => {
          const taken = await base.takeOver(convId, options);
          if (taken.runs > 0) log(`cluster: took over the run of ${convId}${taken.pauses > 0 ? ', paused again' : ''} (its owner's lease lapsed)`);
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
  const join = (convId: string): Promise<void> => adoptConversation(stepwise, store, convId);
  return {
    instanceId,
    stepwise,
    join,
    routes: (debug, serve) => {
      commands = createCommands(
        () => {
          const connection = connect();
          connection.on('error', () => undefined);
          return connection;
        },
        {
          instanceId,
          inboxOf: (id) => `${store.keys.prefix}instance:{${id}}:commands`,
          replyKeyOf: (id) => `${store.keys.prefix}reply:{${id}}`,
          serve,
          replyTimeoutMs: config.replyTimeoutMs ?? 5000,
        },
      );
      return clusterRoutes({ stepwise, store, leases, commands, instanceId, debug, join, convOfPause: pauses.convOf });
    },
  };
}

export { createClusterFrames, type FrameTail$ } from './cluster-frames.js';
export type { ForwardedReply, ForwardedRequest } from './commands.js';
