/**
 * A batch of writes that committed for some conversations and not for others (docs/protocol.md, A 200
 * means committed): a store retries a failed batch one conversation at a time, so one conversation's
 * bad write (a constraint, a value the store refuses) never takes the others' writes with it.
 */
export class PartialCommitFailure extends Error {
  override readonly name = 'PartialCommitFailure';
  constructor(
    /** Why each conversation's writes were not committed; every other conversation's were. */
    readonly failures: ReadonlyMap<string, unknown>,
  ) {
    super(`the writes of ${failures.size} conversation${failures.size === 1 ? '' : 's'} were not committed: ${messageOf(failures.values().next().value)}`);
  }
}

/** What a batch's failure means for one conversation's writes in it: its error, or undefined when they committed. */
export function failureOf(failure: unknown, convId: string): unknown {
  return failure instanceof PartialCommitFailure ? failure.failures.get(convId) : failure;
}

/**
 * The error code a command answers when its writes were not committed: `store_unavailable` (503, send
 * it again) when the store could not write at all (full, busy, unreachable, an I/O error), else
 * `store_failed` (500): the store refused what was written.
 */
export function commitFailureCode(error: unknown): 'store_unavailable' | 'store_failed' {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return 'store_failed';
  return code === 'store_unavailable' || TRANSIENT_SQLITE.some((prefix) => code.startsWith(prefix)) ? 'store_unavailable' : 'store_failed';
}

/** SQLite result codes of a store that could not write now, rather than one that refused the write. */
const TRANSIENT_SQLITE = ['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_READONLY', 'SQLITE_CANTOPEN', 'SQLITE_NOMEM'];

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
