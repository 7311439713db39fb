/** How an instance of a service fences its writes (see `RedisStore.fence`). */
export interface StoreFence {
  readonly tokenOf: (convId: string) => string | undefined;
  readonly onRefused: (convId: string) => void;
}

/** A token no lease ever holds: a fenced write of a conversation this instance does not own. */
const NOT_OWNED = '-';

/** The store's side of fencing: the token each run write carries, and who hears of a refusal. */
export interface Fencing {
  /** From now on, writes carry `fence`'s tokens. */
  fence(fence: StoreFence): void;
  /** The token of a conversation's run writes: '' until fenced (the scripts then read no lease). */
  tokenOf(convId: string): string;
  /** True when fenced and this instance holds no token for the conversation: it may not write its run. */
  lost(convId: string): boolean;
  /** A write of the conversation was refused by its lease: `forget` hears of it, then the fence. */
  refused(convId: string): void;
}

export function createFencing(forget: (convId: string) => void): Fencing {
  let fence: StoreFence | undefined;
  return {
    fence: (given) => {
      fence = given;
    },
    tokenOf: (convId) => (fence ? (fence.tokenOf(convId) ?? NOT_OWNED) : ''),
    lost: (convId) => fence !== undefined && fence.tokenOf(convId) === undefined,
    refused: (convId) => {
      forget(convId);
      fence?.onRefused(convId);
    },
  };
}
