import type { Redis } from 'ioredis';
import { failureOf, outcomeUnknown, type Command, type CommandHandler, type CommandPort, type CommandRequest, type CommandResult } from '../core/commands.js';
import type { RunLeases } from './run-leases.js';
import { createReplyWaits, type ReplyWaits } from './reply-waits.js';

export interface ServiceCommandsConfig {
  readonly leases: RunLeases;
  /** Publishes commands and replies. */
  readonly publisher: Redis;
  /** A connection of its own in subscriber mode: this instance's command and reply channels. */
  readonly subscriber: Redis;
  /** An instance's command channel, `${before}${instanceId}${after}`; its replies come on that channel's `:replies`. */
  readonly channel: { readonly before: string; readonly after: string };
  /** Serves a command of a conversation this instance runs (or nobody does). */
  readonly handler: CommandHandler;
  /** Brings a conversation another instance created here before this instance serves a command about it. */
  readonly join: (convId: string) => Promise<void>;
  /** Whether the conversation has a run not finished in the store (a checkpoint). */
  readonly hasUnfinishedRun: (convId: string) => Promise<boolean>;
  /** The conversation of a pause, from what this instance knows or the store. */
  readonly convOfPause: (pauseId: string) => Promise<string | undefined>;
  /**
   * How long a delivered command waits for the reply of the instance running its conversation before it is
   * answered 503 with an unknown outcome, ms: longer than that instance waits for its own commit.
   */
  readonly replyTimeoutMs: number;
}

interface Envelope {
  readonly id: string;
  readonly from: string;
  readonly request: CommandRequest;
}

/** What sending a command to a lease's holder found: the holder, whether alive and how many heard; undefined when none. */
type Delivery = Awaited<ReturnType<RunLeases['sendToHolder']>>;

/** Try again in a second: the instance running the conversation is changing (a takeover) or did not answer. */
const retry = (code: string, message: string): CommandResult => ({ ok: false, error: { code, message, retry_after_s: 1 } });

/**
 * Commands between instances over Redis pub/sub: the instance a route lands on PUBLISHes the command
 * on the channel of the instance that runs the conversation and waits for the reply on its own. PUBLISH
 * says how many instances heard it, so a command for an instance that is not listening is answered at
 * once; one for an instance that died is answered 503 with `Retry-After` until its runs are taken
 * over (within the lease plus a second), never with a wait and never with 404 for a pause that
 * exists. Commands are served concurrently.
 */
export function createServiceCommands(config: ServiceCommandsConfig): CommandPort & { ready: Promise<void>; dispose(): void } {
  const { leases, subscriber } = config;
  const channelOf = (instanceId: string): string => `${config.channel.before}${instanceId}${config.channel.after}`;
  const own = channelOf(leases.instanceId);
  const waits = createReplyWaits(config.replyTimeoutMs, () => ({
    ok: false,
    error: failureOf(outcomeUnknown('owner_unavailable', 'the instance running this conversation did not answer in time, so the command may still take effect; send it again')),
  }));
  let counter = 0;

  const ready = listen(config, own, waits, channelOf);

  /**
   * Sends the command to the instance that runs the conversation when another live instance holds its
   * lease, in the round trip that finds that instance. Undefined when it is this instance's to serve
   * (nobody holds the lease, or its holder is gone and left no run to take over).
   */
  const forward = async (convId: string, request: CommandRequest): Promise<CommandResult | undefined> => {
    const id = `${leases.instanceId}-${(counter++).toString(36)}`;
    // Waiting before sending: the reply of the instance running it may arrive before the script's own.
    const reply = waits.wait(id);
    const message = JSON.stringify({ id, from: leases.instanceId, request } satisfies Envelope);
    const delivery = await leases.sendToHolder(convId, config.channel, message).catch((error: unknown) => {
      reply.cancel();
      throw error;
    });
    return answerOf(delivery, reply, leases.instanceId, convId, config.hasUnfinishedRun);
  };

  return {
    ready,
    send: async <C extends Command>(request: CommandRequest<C>): Promise<CommandResult<C>> => {
      const convId = request.conv_id;
      if (convId === undefined || leases.tokenOf(convId) !== undefined) return config.handler(request);
      // The result of this command, from the instance that ran it: of the type its command asks for.
      const forwarded = (await forward(convId, request)) as CommandResult<C> | undefined;
      if (forwarded) return forwarded;
      // Nobody runs it: an idle conversation, served here as the store has it.
      await config.join(convId);
      return config.handler(request);
    },
    convOfPause: config.convOfPause,
    dispose: () => {
      waits.answerAll(retry('owner_unavailable', 'this instance is stopping; try again'));
      subscriber.disconnect();
    },
  };
}

/**
 * What a delivery to the lease's holder makes of a command: the holder's reply, a retry while the run
 * changes hands, or undefined when it is this instance's to serve. One place for the rule of who
 * answers, apart from how the command travels.
 */
async function answerOf(
  delivery: Delivery,
  reply: ReturnType<ReplyWaits['wait']>,
  self: string,
  convId: string,
  hasUnfinishedRun: (convId: string) => Promise<boolean>,
): Promise<CommandResult | undefined> {
  if (delivery?.alive && delivery.instanceId !== self) {
    if (delivery.heard > 0) return reply.answered;
    reply.cancel();
    return retry('owner_unavailable', `the instance running this conversation (${delivery.instanceId}) is not listening (it is being replaced); try again`);
  }
  reply.cancel();
  // The run of an instance that died is taken over soon; one that had ended has nothing to take over, and is
  // answered here from the store (a decision it recorded is 409 pause_resolved).
  if (delivery && delivery.instanceId !== self && (await hasUnfinishedRun(convId))) {
    return retry('owner_unavailable', `the instance running this conversation (${delivery.instanceId}) stopped; another one takes its run over within the lease; try again`);
  }
  return undefined;
}

/**
 * Serves the commands that come on this instance's channel (`own`), replying on the sender's, and
 * hands the replies that come on its own `:replies` channel to their waits. Resolves once subscribed.
 */
function listen(config: ServiceCommandsConfig, own: string, waits: ReplyWaits, channelOf: (instanceId: string) => string): Promise<void> {
  const { publisher, subscriber } = config;
  const serve = async (envelope: Envelope): Promise<void> => {
    const reply = await config.handler(envelope.request).catch(
      (error: unknown): CommandResult => ({ ok: false, error: { code: 'internal', message: error instanceof Error ? error.message : 'the instance running it failed' } }),
    );
    await publisher.publish(`${channelOf(envelope.from)}:replies`, JSON.stringify({ id: envelope.id, reply }));
  };
  subscriber.on('message', (channel: string, message: string) => {
    if (channel === own) {
      void serve(JSON.parse(message) as Envelope).catch(() => undefined);
      return;
    }
    const { id, reply } = JSON.parse(message) as { id: string; reply: CommandResult };
    waits.answer(id, reply);
  });
  const ready = subscriber.subscribe(own, `${own}:replies`).then(() => undefined);
  // Awaited by recovery; ioredis subscribes again by itself after a reconnect.
  ready.catch(() => undefined);
  return ready;
}
