/**
 * True for the calls of the first key (a conversation) of each event-loop turn, false for other keys'
 * calls in the same turn.
 *
 * Why: a waiter on the SQLite store's commit (a tool that cannot run twice waits for its start to be
 * recorded) is served at once by a transaction of its own, so a lone run's tool starts in the same
 * tick, and a run whose engine answers synchronously commits each step at once. But when many runs
 * reach that point in one turn (their engines answered together), a transaction each is the store's
 * whole cost: the other runs' waiters join the batch the write queue commits at the end of the turn,
 * so the turn costs two transactions, not one per run.
 */
export function createFirstInTurn(schedule: (task: () => void) => void = (task) => void setImmediate(task)): (key: string) => boolean {
  let first: string | undefined;
  const reset = (): void => {
    first = undefined;
  };
  return (key) => {
    if (first !== undefined) return first === key;
    first = key;
    schedule(reset);
    return true;
  };
}
