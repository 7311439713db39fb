import type { Request, RequestHandler, Response } from 'express';
import { lastValueFrom, timeout, TimeoutError, type Observable } from 'rxjs';
import { commitFailureCode } from '../core/commit-failure.js';
import type { CommandHandler, CommandReply } from '../core/commands.js';
import { LeaseLostError } from '../core/store-errors.js';
import { callerFrom, type Caller } from './auth.js';
import { assertDebug, CONV_ID, type ServerContext } from './context.js';
import { errorBody, HttpError, tryAgain } from './errors.js';

/**
 * A command that steers a run, as a function of the caller and the request body, served by the
 * process that owns the run (the command port brings it there, docs/protocol.md, Several instances).
 * `convId` is the conversation the route found the command to be about. A refusal is a thrown `HttpError`.
 */
export type StepCommand = (context: ServerContext, caller: Caller, body: unknown, convId: string | undefined) => unknown;

/** How long a command waits for what it did to be committed before it answers 503 (the store is away). */
const COMMIT_WAIT_MS = 4000;

/**
 * Resolves once the conversation's writes queued so far are committed: a 200 is a promise that
 * survives `kill -9` the next instant. 503 with `Retry-After` when the store refused them (another
 * instance owns the run now: sent again, the command reaches it) or did not commit them in time.
 */
export async function committed(context: ServerContext, convId: string): Promise<void> {
  try {
    await lastValueFrom(context.stepwise.store.committed$(convId).pipe(timeout({ first: COMMIT_WAIT_MS })), { defaultValue: undefined });
  } catch (error) {
    committedFailure(error);
  }
}

/** A commit wait's failure as the command's reply. */
function committedFailure(error: unknown): never {
  if (error instanceof LeaseLostError) throw tryAgain('owner_changed', 'another instance runs this conversation now and this command was not recorded; send it again');
  if (error instanceof TimeoutError) throw tryAgain('store_unavailable', 'the store did not confirm this command in time; send it again (a decision already recorded answers 409 pause_resolved)');
  throw new HttpError(commitFailureCode(error) === 'store_unavailable' ? 503 : 500, commitFailureCode(error), `the store did not record this command: ${messageOf(error)}`);
}

/**
 * Resolves once a decision is committed (`SubmitResult.committed$`). One the store refused took no effect:
 * 503 `store_unavailable` (send it again) when the store could not write, 500 `store_failed` when it
 * refused what was written (docs/protocol.md, A 200 means committed).
 */
export async function decisionCommitted(committed$: Observable<never>): Promise<void> {
  try {
    await lastValueFrom(committed$.pipe(timeout({ first: COMMIT_WAIT_MS })), { defaultValue: undefined });
  } catch (error) {
    if (error instanceof LeaseLostError || error instanceof TimeoutError) return committedFailure(error);
    if (commitFailureCode(error) === 'store_unavailable') throw tryAgain('store_unavailable', 'the store could not record this decision and it took no effect; send it again');
    throw new HttpError(500, 'store_failed', `the store refused to record this decision and it took no effect: ${messageOf(error)}`);
  }
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * What a listing shows, once the store has committed it: a pause an operator is shown survives a
 * crash of this process the next instant (its run pauses again there, and the decision is taken).
 * The listing is taken first, so everything in it was queued before the commit waited on.
 */
export async function committedOnly<T>(context: ServerContext, listed: T): Promise<T> {
  await context.stepwise.store.flush();
  return listed;
}

/** Serves the commands that reach this process, by route, with the route's own functions. */
export function createCommandHandler(context: () => ServerContext, commands: Readonly<Record<string, StepCommand>>, onError?: (error: unknown) => void): CommandHandler {
  return async ({ name, user, by, body, conv_id }) => {
    const command = commands[name];
    if (!command) return { status: 404, body: errorBody('not_found', `no command ${name}`) };
    try {
      return { status: 200, body: await command(context(), { user, ...(by === undefined ? {} : { by }) }, body, conv_id) };
    } catch (error) {
      if (!(error instanceof HttpError)) {
        onError?.(error);
        return { status: 500, body: errorBody('internal', 'internal server error') };
      }
      const reply = { status: error.status, body: { ...(error.extra ?? {}), ...errorBody(error.code, error.message, error.details) } };
      return error.retryAfterS === undefined ? reply : { ...reply, retry_after_s: error.retryAfterS };
    }
  };
}

/**
 * The route of a command: it finds the conversation the command is about (`target`) and sends the
 * command through the command port, which serves it here or on the instance that owns the run.
 */
export function commandRoute(context: ServerContext, name: string, target: (body: unknown) => Promise<string | undefined>): RequestHandler {
  return async (req: Request, res: Response) => {
    if (name.startsWith('/debug/')) assertDebug(context);
    const convId = await target(req.body);
    const caller = callerFrom(res);
    send(res, await context.commands.send({ name, body: req.body, ...(convId === undefined ? {} : { conv_id: convId }), ...(caller.user ? { user: caller.user } : {}) }));
  };
}

/** The conversation a body names by `conv_id`, when it is one. */
export const convIdOfBody = (body: unknown): Promise<string | undefined> => {
  const convId = (body as { conv_id?: unknown } | undefined)?.conv_id;
  return Promise.resolve(typeof convId === 'string' && CONV_ID.test(convId) ? convId : undefined);
};

function send(res: Response, reply: CommandReply): void {
  if (reply.retry_after_s !== undefined) res.setHeader('Retry-After', String(reply.retry_after_s));
  res.status(reply.status).json(reply.body);
}
