/**
 * Lets work in flight be given up on all at once (a store closed while Redis is unreachable: a commit
 * waiting in ioredis's offline queue must end then), without keeping anything of the work that finished.
 *
 * Why not `Promise.race([work, gaveUp])` on one pending `gaveUp`: every race adds reactions to `gaveUp`
 * that stay until it settles, each holding the race's result, so a long-lived store kept every commit's
 * replies for good: memory that grew with every run of a Redis service's instance.
 */
export interface GiveUp {
  /** Settles as `work` does, or rejects with the reason once `giveUp` is called. */
  race<T>(work: Promise<T>): Promise<T>;
  /** Rejects every race in flight and every later one with `reason`. */
  giveUp(reason: Error): void;
}

export function createGiveUp(): GiveUp {
  const waiting = new Set<(reason: Error) => void>();
  let given: Error | undefined;
  return {
    race: (work) => {
      if (given) return Promise.reject(given);
      return new Promise((resolve, reject) => {
        waiting.add(reject);
        work.then(resolve, reject).finally(() => waiting.delete(reject));
      });
    },
    giveUp: (reason) => {
      given ??= reason;
      for (const reject of waiting) reject(given);
      waiting.clear();
    },
  };
}
