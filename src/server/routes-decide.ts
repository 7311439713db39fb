import type { Request, RequestHandler } from 'express';
import { z } from 'zod';
import type { DecideCommand } from '../core/commands.js';
import { commandRoute, convIdOf } from './commands.js';
import { convIdSchema, type ServerContext } from './context.js';
import { HttpError, parseOr400 } from './errors.js';
import { rememberSchema } from './routes-grants.js';

/** A decision's body (docs/protocol.md, Decisions); `POST /pauses/:pause_id` takes it without `pause_id` and `results`. */
export const decisionSchema = z.object({
  conv_id: convIdSchema.optional(),
  // Any string here: an unknown action is answered as `invalid_action`, not as a malformed request.
  action: z.string().max(64).optional(),
  tool_call_ids: z.array(z.string()).max(1000).optional(),
  reason: z.string().max(10_000).optional(),
  edits: z.record(z.string(), z.unknown()).optional(),
  results: z.record(z.string(), z.unknown()).optional(),
  answers: z.record(z.string(), z.unknown()).optional(),
  remember: rememberSchema.optional(),
});

const continueSchema = decisionSchema.extend({ pause_id: z.string().min(1).max(256) });
const pauseIdSchema = z.string().min(1).max(256);

/** `POST /debug/continue` (mounted behind debug mode): a decision with result edits allowed. */
export const continueRoute = (context: ServerContext): RequestHandler => decideRoute(context, (req) => ({ type: 'decide', ...parseOr400(continueSchema, req.body) }));

/** `POST /pauses/:pause_id`: approvals need no debugger (docs/protocol.md, The inbox); result edits stay a debugging feature. */
export const pauseRoute = (context: ServerContext): RequestHandler =>
  decideRoute(context, (req) => {
    const pauseId = parseOr400(pauseIdSchema, req.params['pause_id'], 'pause_id');
    const body: unknown = req.body;
    if (typeof body === 'object' && body !== null && Object.hasOwn(body, 'results')) {
      throw new HttpError(400, 'invalid_action', 'result edits need debug mode: send them to POST /debug/continue');
    }
    return { type: 'decide', ...parseOr400(decisionSchema, body ?? {}), pause_id: pauseId };
  });

/**
 * The route of a decision: sent where the pause's own conversation runs, wherever that is; else where
 * the conversation the body names does.
 */
function decideRoute(context: ServerContext, read: (req: Request) => DecideCommand): RequestHandler {
  return commandRoute(context, read, async (command) => (await context.commands.convOfPause(command.pause_id)) ?? (await convIdOf(command)));
}
