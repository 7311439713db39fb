import { lastValueFrom, timeout, TimeoutError, type Observable } from 'rxjs';
import { commitFailureCode } from '../../core/commit-failure.js';
import { COMMIT_WAIT_MS, CommandError, outcomeUnknown, tryAgainLater } from '../../core/commands.js';
import { LeaseLostError } from '../../core/store-errors.js';

/**
 * Resolves once what a command did is committed (docs/protocol.md, A 200 means committed): a done
 * command is a promise that survives `kill -9` the next instant. Else it throws why, as the command's
 * failure: another instance runs the conversation now, the store did not confirm in time, could not
 * write (`store_unavailable`, send it again) or refused what was written (`store_failed`).
 */
export async function whenCommitted(commit$: Observable<never>, what = 'this command'): Promise<void> {
  try {
    await lastValueFrom(commit$.pipe(timeout({ first: COMMIT_WAIT_MS })), { defaultValue: undefined });
  } catch (error) {
    if (error instanceof LeaseLostError) throw tryAgainLater('owner_changed', `another instance runs this conversation now and ${what} was not recorded; send it again`);
    if (error instanceof TimeoutError) throw outcomeUnknown('store_unavailable', `the store did not confirm ${what} in time, so it may still take effect; send it again (a decision already recorded answers pause_resolved)`);
    if (commitFailureCode(error) === 'store_unavailable') throw tryAgainLater('store_unavailable', `the store could not record ${what} and it took no effect; send it again`);
    throw new CommandError('store_failed', `the store refused to record ${what} and it took no effect: ${error instanceof Error ? error.message : String(error)}`);
  }
}
