/**
 * The store's typed failures (see `store.ts`): the CLI turns the ones raised at start (locked,
 * unreadable, unavailable) into a message and exit 1; the server into 503 `store_unavailable`.
 */

export type StoreErrorCode = 'store_locked' | 'store_unreadable' | 'stored_row_unreadable' | 'store_sequence' | 'store_closed' | 'store_unavailable' | 'lease_lost';

/** Every store failure the CLI and server can turn into a message (and an exit 1 at start). */
export class StoreError extends Error {
  override readonly name: string = 'StoreError';
  constructor(
    readonly code: StoreErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Another live process holds the data dir. */
export class StoreLockedError extends StoreError {
  override readonly name = 'StoreLockedError';
  constructor(
    readonly dir: string,
    readonly holderPid: number | undefined,
  ) {
    const holder = holderPid === undefined ? 'another connection' : `process ${holderPid}`;
    super('store_locked', `the data dir ${dir} is in use by ${holder}; stop it or choose another --data-dir`);
  }
}

/** The store's file cannot be read (corrupt, truncated, not a stepwise store, or a newer schema); it was left untouched. */
export class StoreUnreadableError extends StoreError {
  override readonly name = 'StoreUnreadableError';
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super('store_unreadable', `cannot read the store ${file}: ${reason} (the file was left untouched)`);
  }
}

/**
 * One stored row cannot be read back (it does not parse, has the wrong shape, or nests deeper than a
 * stored value may): the store itself is readable, and recovery ends the one run the row belongs to
 * `failed` (docs/protocol.md, Durability). `what` names the row, `reason` says what is wrong with it.
 */
export class StoredRowError extends StoreError {
  override readonly name = 'StoredRowError';
  constructor(
    readonly what: string,
    readonly reason: string,
  ) {
    super('stored_row_unreadable', `${what} cannot be read back: ${reason}`);
  }
}

/** Frames that would reuse or skip a seq. */
export class StoreSequenceError extends StoreError {
  override readonly name = 'StoreSequenceError';
  constructor(
    readonly conv_id: string,
    readonly expected: number,
    readonly got: number,
  ) {
    super('store_sequence', `conversation ${conv_id}: frame seq ${got} where ${expected} was next (seq is never reused or skipped)`);
  }
}

/** A write after `close()`. */
export class StoreClosedError extends StoreError {
  override readonly name = 'StoreClosedError';
  constructor(kind: string) {
    super('store_closed', `the ${kind} store was closed`);
  }
}

/**
 * The store's server cannot be reached (Redis down, refused, timed out). Writes stay queued and are
 * committed when it is back; reads and `flush()` fail with this meanwhile, and the server answers
 * 503 `store_unavailable` with it.
 */
export class StoreUnavailableError extends StoreError {
  override readonly name = 'StoreUnavailableError';
  constructor(
    readonly kind: string,
    /** Where the store lives, without credentials (a Redis URL). */
    readonly where: string,
    readonly reason: string,
  ) {
    super('store_unavailable', `the ${kind} store at ${where} is unavailable: ${reason}`);
  }
}

/**
 * A run's write refused because this process does not hold its conversation's lease with the token
 * it wrote under: another instance of the service owns the run now (docs/protocol.md, Several instances).
 */
export class LeaseLostError extends StoreError {
  override readonly name = 'LeaseLostError';
  constructor(readonly conv_id: string) {
    super('lease_lost', `conversation ${conv_id}: another instance owns its run now; this one may not write to it`);
  }
}
