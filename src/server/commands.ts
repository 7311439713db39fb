import type { Request, RequestHandler, Response } from 'express';
import { CommandError, type Command, type CommandFailure, type CommandRequest, type CommandResult } from '../core/commands.js';
import { whenCommitted } from '../sessions/commands/commits.js';
import { callerFrom, type Caller } from './auth.js';
import { CONV_ID, type ServerContext } from './context.js';
import { errorBody, HttpError } from './errors.js';

/**
 * The HTTP status of each command failure's code (docs/protocol.md, Errors): the one place where
 * what a command says becomes what a route answers. A code not listed is a 500.
 */
const STATUS_OF: Readonly<Record<string, number>> = Object.freeze({
  invalid_request: 400,
  invalid_action: 400,
  invalid_arguments: 400,
  too_deep: 400,
  forbidden: 403,
  not_found: 404,
  unknown_pause: 404,
  pause_resolved: 409,
  run_in_progress: 409,
  internal: 500,
  store_failed: 500,
  store_unavailable: 503,
  owner_unavailable: 503,
  owner_changed: 503,
  pause_not_ready: 503,
});

export const statusOf = (failure: Pick<CommandFailure, 'code'>): number => STATUS_OF[failure.code] ?? 500;

/** A command's failure as the route's refusal. */
export const httpErrorOf = (failure: CommandFailure): HttpError =>
  new HttpError(statusOf(failure), failure.code, failure.message, failure.details, failure.extra, failure.retry_after_s);

/**
 * Resolves once the conversation's writes queued so far are committed: a 200 is a promise that
 * survives `kill -9` the next instant. A route's own refusal otherwise (see `whenCommitted`).
 */
export async function committed(context: ServerContext, convId: string): Promise<void> {
  try {
    await whenCommitted(context.stepwise.store.committed$(convId));
  } catch (error) {
    throw error instanceof CommandError ? httpErrorOf(error) : error;
  }
}

/**
 * What a listing shows, once the store has committed it: a pause an operator is shown survives a
 * crash of this process the next instant (its run pauses again there, and the decision is taken).
 * The listing is taken first, so everything in it was queued before the commit waited on.
 */
export async function committedOnly<T>(context: ServerContext, listed: T): Promise<T> {
  await context.stepwise.store.flush();
  return listed;
}

/**
 * The route of a command: it reads the command from the request (a malformed one is the route's 400),
 * sends it through the command port, which serves it here or on the instance that runs its
 * conversation, and answers its result: `{ok: true, ...value}`, or its failure with the failure's status.
 */
export function commandRoute<C extends Command>(context: ServerContext, read: (req: Request, caller: Caller) => C | Promise<C>, target: (command: C) => Promise<string | undefined>): RequestHandler {
  return async (req: Request, res: Response) => {
    const caller = callerFrom(res);
    const command = await read(req, caller);
    const convId = await target(command);
    const request: CommandRequest<C> = { command, ...(convId === undefined ? {} : { conv_id: convId }), ...(caller.user ? { user: caller.user } : {}) };
    sendResult(res, await context.commands.send(request));
  };
}

/** The conversation a command names by `conv_id`, when it is one. */
export const convIdOf = (command: { readonly conv_id?: string }): Promise<string | undefined> =>
  Promise.resolve(command.conv_id !== undefined && CONV_ID.test(command.conv_id) ? command.conv_id : undefined);

function sendResult(res: Response, result: CommandResult): void {
  if (result.ok) {
    res.json({ ok: true, ...result.value });
    return;
  }
  const { error } = result;
  if (error.retry_after_s !== undefined) res.setHeader('Retry-After', String(error.retry_after_s));
  res.status(statusOf(error)).json({ ...(error.extra ?? {}), ...errorBody(error.code, error.message, error.details) });
}
