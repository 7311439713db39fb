import type { Request, RequestHandler, Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import type { DecideCommand, StepModeCommand } from '../core/commands.js';
import { callerFrom, mayAccess } from './auth.js';
import { assertDebug, convIdSchema, ownedConversation, type ServerContext } from './context.js';
import { commandRoute, committedOnly, convIdOf } from './commands.js';
import { parseOr400 } from './errors.js';
import { singleValues } from './routes-conversations.js';
import { rememberSchema } from './routes-grants.js';

const targetSchema = z.object({ conv_id: convIdSchema.optional(), session_id: z.string().min(1).max(256).optional() });

/**
 * Step mode with a filter (docs/protocol.md, Breakpoints and result edits): no `tools` means every tool, no `phases`
 * both phases.
 */
const enableSchema = targetSchema.extend({
  tools: z.array(z.string().min(1).max(64)).max(1000).optional(),
  phases: z.array(z.enum(['after_inference', 'after_tools'])).min(1).max(2).optional(),
});

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

const pausesQuery = z.object({ conv_id: convIdSchema.optional() });

/** Step control over HTTP: `/debug/step/enable|disable`, `/debug/continue`, `/debug/pauses`. */
export function debugRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.use('/debug', (_req, _res, next) => {
    assertDebug(context);
    next();
  });

  router.post('/debug/step/enable', commandRoute(context, (req) => stepModeOf(enableSchema, req.body, true), convIdOf));
  router.post('/debug/step/disable', commandRoute(context, (req) => stepModeOf(targetSchema, req.body, false), convIdOf));
  router.post('/debug/continue', decideRoute(context, (req) => ({ type: 'decide', ...parseOr400(continueSchema, req.body) })));

  router.get('/debug/pauses', async (req, res) => {
    const caller = callerFrom(res);
    const { conv_id } = parseOr400(pausesQuery, singleValues(req.query), 'query');
    if (conv_id !== undefined) {
      await context.directory.open(conv_id);
      await ownedConversation(context, caller, conv_id);
    }
    const listed = await context.directory.pauses(conv_id);
    // Shown once committed: a pause an operator sees survives a crash of this process the next instant.
    const pauses = await committedOnly(context, listed.filter(({ owner }) => mayAccess(caller, owner)).map(({ pause }) => pause));
    res.json({ pauses });
  });
  return router;
}

/**
 * The route of a decision (`/debug/continue`, `POST /pauses/:pause_id`): sent where the pause's own
 * conversation runs, wherever that is; else where the conversation the body names does.
 */
export function decideRoute(context: ServerContext, read: (req: Request) => DecideCommand): RequestHandler {
  return commandRoute(context, read, async (command) => (await context.commands.convOfPause(command.pause_id)) ?? (await convIdOf(command)));
}

/** A step mode command from its body. */
function stepModeOf(schema: typeof targetSchema | typeof enableSchema, body: unknown, enabled: boolean): StepModeCommand {
  const { conv_id, session_id, ...filter } = parseOr400(schema, body) as z.infer<typeof enableSchema>;
  return { type: 'step_mode', enabled, ...(conv_id === undefined ? {} : { conv_id }), ...(session_id === undefined ? {} : { session_id }), ...(enabled ? filter : {}) };
}
