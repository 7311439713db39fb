import { Router } from 'express';
import { z } from 'zod';
import { callerFrom, mayAccess } from './auth.js';
import { assertDebug, convIdSchema, ownedSession, type ServerContext } from './context.js';
import { parseOr400 } from './errors.js';
import { singleValues } from './routes-conversations.js';
import { continuePause, disableStep, enableStep } from './step-commands.js';

const pausesQuery = z.object({ conv_id: convIdSchema.optional() });

/** Step control over HTTP: `/debug/step/enable|disable`, `/debug/continue`, `/debug/pauses`. */
export function debugRoutes(context: ServerContext): Router {
  const router = Router();
  const { controller, sessions } = context.stepwise;
  router.use('/debug', (_req, _res, next) => {
    assertDebug(context);
    next();
  });

  router.post('/debug/step/enable', (req, res) => void res.json(enableStep(context, callerFrom(res), req.body)));
  router.post('/debug/step/disable', (req, res) => void res.json(disableStep(context, callerFrom(res), req.body)));
  router.post('/debug/continue', (req, res) => void res.json(continuePause(context, callerFrom(res), req.body)));

  router.get('/debug/pauses', (req, res) => {
    const caller = callerFrom(res);
    const { conv_id } = parseOr400(pausesQuery, singleValues(req.query), 'query');
    if (conv_id !== undefined) {
      res.json({ pauses: controller.pending(ownedSession(context, caller, conv_id).session_id) });
      return;
    }
    const mine = new Set(sessions.list().filter((session) => mayAccess(caller, session.owner)).map((session) => session.session_id));
    res.json({ pauses: controller.pending().filter((pause) => mine.has(pause.session_id)) });
  });
  return router;
}
