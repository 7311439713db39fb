import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import type { StepModeCommand } from '../core/commands.js';
import { callerFrom, mayAccess } from './auth.js';
import { assertDebug, convIdSchema, ownedConversation, type ServerContext } from './context.js';
import { commandRoute, committedOnly, convIdOf } from './commands.js';
import { parseOr400 } from './errors.js';
import { singleValues } from './routes-conversations.js';
import { continueRoute } from './routes-decide.js';

const targetSchema = z.object({ conv_id: convIdSchema.optional(), session_id: z.string().min(1).max(256).optional() });

/**
 * Step mode with a filter (docs/protocol.md, Breakpoints and result edits): no `tools` means every tool, no `phases`
 * both phases.
 */
const enableSchema = targetSchema.extend({
  tools: z.array(z.string().min(1).max(64)).max(1000).optional(),
  phases: z.array(z.enum(['after_inference', 'after_tools'])).min(1).max(2).optional(),
});

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
  router.post('/debug/continue', continueRoute(context));

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

/** A step mode command from its body. */
function stepModeOf(schema: typeof targetSchema | typeof enableSchema, body: unknown, enabled: boolean): StepModeCommand {
  const { conv_id, session_id, ...filter } = parseOr400(schema, body) as z.infer<typeof enableSchema>;
  return { type: 'step_mode', enabled, ...(conv_id === undefined ? {} : { conv_id }), ...(session_id === undefined ? {} : { session_id }), ...(enabled ? filter : {}) };
}
