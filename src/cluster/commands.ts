import type { Redis } from 'ioredis';

/** A route's request as another instance (the run's owner) is to serve it. */
export interface ForwardedRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization?: string;
  readonly body: unknown;
}

/** The owner's answer, as it would have answered the client itself. */
export interface ForwardedReply {
  readonly status: number;
  readonly body: unknown;
}

export interface CommandConfig {
  readonly instanceId: string;
  /** The command list of an instance (under the store's prefix). */
  readonly inboxOf: (instanceId: string) => string;
  /** The list a reply is pushed to. */
  readonly replyKeyOf: (requestId: string) => string;
  /** Serves a request that another instance forwarded here; a synchronous answer is sent at once. */
  readonly serve: (request: ForwardedRequest) => ForwardedReply | Promise<ForwardedReply>;
  /** How long a sender waits for the owner's reply before it answers 503, ms. */
  readonly replyTimeoutMs: number;
}

export interface Commands {
  /** Delivers a request to the instance that owns the run; undefined when it did not answer in time. */
  send(instanceId: string, request: ForwardedRequest): Promise<ForwardedReply | undefined>;
  dispose(): void;
}

/** Seconds a blocking pop of the inbox waits before it looks again (so `dispose` ends it soon). */
const INBOX_BLOCK_S = 1;
/** Reply connections kept open between requests: opening one per request cost milliseconds (`cluster_resume`). */
const IDLE_WAITERS = 4;

/**
 * Request/reply between instances over Redis lists: a sender RPUSHes `{id, request}` to the owner's
 * inbox and BLPOPs a reply key of its own; the owner BLPOPs its inbox, serves the request as the
 * route it names, and RPUSHes the answer (which expires if nobody waits for it any more).
 * `connect()` gives a connection of its own for each blocking pop; a few are kept for the next requests.
 */
export function createCommands(connect: () => Redis, config: CommandConfig): Commands {
  const inbox = connect();
  const idle: Redis[] = [];
  let stopped = false;
  const failure = (error: unknown): ForwardedReply => ({
    status: 500,
    body: { error: { code: 'internal', message: error instanceof Error ? error.message : 'the owner failed' } },
  });
  const send = async (id: string, reply: ForwardedReply): Promise<void> => {
    const key = config.replyKeyOf(id);
    await inbox.multi().rpush(key, JSON.stringify(reply)).pexpire(key, config.replyTimeoutMs * 2).exec();
  };
  const answer = (raw: string): Promise<void> => {
    const { id, request } = JSON.parse(raw) as { id: string; request: ForwardedRequest };
    let reply: ForwardedReply | Promise<ForwardedReply>;
    try {
      reply = config.serve(request);
    } catch (error) {
      reply = failure(error);
    }
    // A synchronous answer goes out before what the command set going (a resumed run starts on a
    // microtask, and an `await` here would wait behind its next step: about 1 ms of `cluster_resume`).
    return reply instanceof Promise ? reply.catch(failure).then((settled) => send(id, settled)) : send(id, reply);
  };
  const listen = async (): Promise<void> => {
    while (!stopped) {
      try {
        const popped = await inbox.blpop(config.inboxOf(config.instanceId), INBOX_BLOCK_S);
        // Served one by one in arrival order, as the routes would serve them.
        if (popped) await answer(popped[1]);
      } catch {
        if (!stopped) await new Promise((done) => setTimeout(done, 200));
      }
    }
  };
  void listen();
  return {
    send: async (instanceId, request) => {
      const id = `${config.instanceId}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
      const waiter = idle.pop() ?? connect();
      let reusable = false;
      try {
        // Sent together (ioredis pipelines commands issued before either reply): one round trip less
        // per forwarded command (`cluster_resume`).
        const [, popped] = await Promise.all([
          waiter.rpush(config.inboxOf(instanceId), JSON.stringify({ id, request })),
          waiter.blpop(config.replyKeyOf(id), config.replyTimeoutMs / 1000),
        ]);
        reusable = true;
        return popped ? (JSON.parse(popped[1]) as ForwardedReply) : undefined;
      } finally {
        // A connection whose command failed (Redis away) is not trusted again.
        if (reusable && !stopped && idle.length < IDLE_WAITERS) idle.push(waiter);
        else waiter.disconnect();
      }
    },
    dispose: () => {
      stopped = true;
      inbox.disconnect();
      for (const waiter of idle.splice(0)) waiter.disconnect();
    },
  };
}
