import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import { StoreError, StoreUnavailableError } from '../../core/store-errors.js';

/** How the store's connections behave when Redis goes away. */
export interface ConnectionConfig {
  readonly url: string;
  /** Longest wait between reconnection attempts, ms. */
  readonly reconnectMaxMs: number;
  /** A command without a reply after this long fails (and counts as unavailable), ms; 0: never. */
  readonly commandTimeoutMs: number;
}

/**
 * A connection and whether Redis is reachable now. While it is not, reads fail at once with a
 * `StoreUnavailableError` (a route answers 503) instead of queueing behind a reconnect.
 */
export interface Connection {
  readonly client: Redis;
  /** The URL without credentials, for messages. */
  readonly where: string;
  isDown(): boolean;
  /** Calls `listener` (once) the next time the connection is lost; returns a remover. */
  onDown(listener: (error: StoreUnavailableError) => void): () => void;
  /** The error a failed command becomes: unavailable when it was about reaching Redis, else itself. */
  toStoreError(error: unknown): unknown;
  unavailable(reason?: string): StoreUnavailableError;
  /** A second connection with the same settings (a blocking XREAD must not hold up the others). */
  duplicate(): Redis;
}

/** Replies that mean "not now" rather than "wrong": Redis is starting, busy, or read-only during a failover. */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|READONLY|CLUSTERDOWN)\b/;

/** True when a failed command says Redis could not be reached (as opposed to a bad command). */
export function isUnavailability(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'ReplyError') return TRANSIENT_REPLY.test(error.message);
  // EXECABORT and script errors are replies; everything else from ioredis is about the connection
  // (closed, refused, timed out, MaxRetriesPerRequestError, a transaction aborted by a reconnect).
  return !/^(ERR|WRONGTYPE|NOSCRIPT|EXECABORT)\b/.test(error.message);
}

/** The URL as it can be printed: no user name or password. */
export function printableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(an invalid Redis URL)';
  }
}

export function createConnection(config: ConnectionConfig): Connection {
  // Loaded when a Redis store is opened, not when the CLI imports this module: loading ioredis would
  // slow every start, SQLite's included. `require` keeps the store's creation synchronous.
  const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const where = printableUrl(config.url);
  const options: RedisOptions = {
    // Commands wait in ioredis's offline queue only until the next failed attempt: with 0 retries per
    // request, each lost connection fails what is queued, so nothing hangs while Redis is away. The
    // store's write queue sends its batches again itself (see redis-store.ts).
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (times) => Math.min(50 * times, config.reconnectMaxMs),
    connectTimeout: Math.max(1000, config.commandTimeoutMs || 10_000),
    ...(config.commandTimeoutMs > 0 ? { commandTimeout: config.commandTimeoutMs } : {}),
    lazyConnect: false,
  };
  let down = false;
  let lastReason = 'not connected yet';
  const listeners = new Set<(error: StoreUnavailableError) => void>();
  const unavailable = (reason = lastReason): StoreUnavailableError => new StoreUnavailableError('redis', where, reason);
  // One error policy for every connection to this Redis, the store's and those it gives out: an error
  // is reported as the reason of the next StoreUnavailableError, never printed by ioredis (which it does
  // for every failed reconnection attempt of a client without an 'error' listener) and never dropped.
  const report = (error: Error): void => {
    lastReason = error.message || error.name;
  };
  const watched = (redis: Redis): Redis => redis.on('error', report);
  const client = watched(new RedisClient(config.url, options));
  client.on('ready', () => {
    down = false;
  });
  client.on('close', () => {
    down = true;
    const error = unavailable(lastReason === 'not connected yet' ? 'the connection was closed' : lastReason);
    for (const listener of [...listeners]) listener(error);
    listeners.clear();
  });

  return {
    client,
    where,
    isDown: () => down,
    onDown: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // "max retries per request" says only that ioredis gave up: the last connection error says why.
    toStoreError: (error) =>
      !(error instanceof StoreError) && isUnavailability(error) ? unavailable((error as Error).name === 'MaxRetriesPerRequestError' ? lastReason : (error as Error).message) : error,
    unavailable,
    // Without the command timeout: a blocking read or a subscriber waits as long as it means to.
    duplicate: () => watched(client.duplicate({ commandTimeout: undefined })),
  };
}
