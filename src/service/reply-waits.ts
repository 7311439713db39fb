import type { CommandResult } from '../core/commands.js';

/** The commands this instance sent and waits on a reply to, by id. */
export interface ReplyWaits {
  /** Waits for the reply to the command `id`; answered `timedOut` when none comes within `timeoutMs`. */
  wait(id: string): { readonly answered: Promise<CommandResult>; cancel(): void };
  /** The reply to `id` came (ignored when nobody waits on it any more). */
  answer(id: string, reply: CommandResult): void;
  /** Answers every wait now (the instance is stopping). */
  answerAll(reply: CommandResult): void;
}

export function createReplyWaits(timeoutMs: number, timedOut: () => CommandResult): ReplyWaits {
  const waiting = new Map<string, (reply: CommandResult) => void>();
  return {
    wait: (id) => {
      let cancel = (): void => undefined;
      const answered = new Promise<CommandResult>((resolve) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          resolve(timedOut());
        }, timeoutMs);
        cancel = () => {
          clearTimeout(timer);
          waiting.delete(id);
        };
        waiting.set(id, (reply) => {
          cancel();
          resolve(reply);
        });
      });
      return { answered, cancel: () => cancel() };
    },
    answer: (id, reply) => waiting.get(id)?.(reply),
    answerAll: (reply) => {
      for (const resolve of waiting.values()) resolve(reply);
    },
  };
}
