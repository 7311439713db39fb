import { Router } from 'express';
import { z } from 'zod';
import type { Session } from '../sessions/session.js';
import type { ContinueCommand } from '../streams/step-commands.js';
import { callerFrom, mayAccess, type Caller } from './auth.js';
import { assertDebug, assertOwner, convIdSchema, ownedSession, type ServerContext } from './context.js';
import { forbidden, HttpError, invalidRequest, notFound, parseOr400 } from './errors.js';
import { singleValues } from './routes-conversations.js';

/**
 * A command that steers a run, as a plain function of the caller and the request body: its route
 * calls it, and so does the instance that owns a run when another instance forwards the command to
 * it (SPEC §7, ./forwarded-commands.ts). A refusal is a thrown `HttpError`.
 */
export type StepCommand = (context: ServerContext, caller: Caller, body: unknown) => unknown;

const targetSchema = z.object({ conv_id: convIdSchema.optional(), session_id: z.string().min(1).max(256).optional() });

/** Step mode with a filter (SPEC §8): no `tools` means every tool, no `phases` both phases. */
const enableSchema = targetSchema.extend({
  tools: z.array(z.string().min(1).max(64)).max(1000).optional(),
  phases: z.array(z.enum(['after_inference', 'after_tools'])).min(1).max(2).optional(),
});

const continueSchema = z.object({
  pause_id: z.string().min(1).max(256),
  conv_id: convIdSchema.optional(),
  // Any string here: an unknown action is answered as `invalid_action`, not as a malformed request.
  action: z.string().max(64).optional(),
  tool_call_ids: z.array(z.string()).max(1000).optional(),
  reason: z.string().max(10_000).optional(),
  edits: z.record(z.string(), z.unknown()).optional(),
  results: z.record(z.string(), z.unknown()).optional(),
});

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

export const enableStep: StepCommand = (context, caller, body) => {
  assertDebug(context);
  const { tools, phases } = parseOr400(enableSchema, body);
  const session = targetSession(context, caller, body);
  const filter = { ...(tools ? { tools } : {}), ...(phases ? { phases: [...new Set(phases)] } : {}) };
  context.stepwise.controller.enable(session.session_id, tools || phases ? filter : undefined);
  return { ok: true, session_id: session.session_id, conv_id: session.conv_id };
};

export const disableStep: StepCommand = (context, caller, body) => {
  assertDebug(context);
  const session = targetSession(context, caller, body);
  return { ok: true, session_id: session.session_id, released: context.stepwise.controller.disable(session.session_id) };
};

const ACTIONS: readonly string[] = ['continue', 'deny', 'edit'] satisfies readonly NonNullable<ContinueCommand['action']>[];
const isAction = (action: string): action is NonNullable<ContinueCommand['action']> => ACTIONS.includes(action);

const SUBMIT_STATUS = { unknown_pause: 404, pause_resolved: 409, invalid_action: 400, invalid_arguments: 400 } as const;

export const continuePause: StepCommand = (context, caller, body) => {
  assertDebug(context);
  const command = parseOr400(continueSchema, body);
  if (command.action !== undefined && !isAction(command.action)) {
    // Refused before the pause is looked up: the request is wrong whichever pause it names.
    throw new HttpError(400, 'invalid_action', `unknown action "${command.action}" (continue, deny or edit)`);
  }
  const { controller } = context.stepwise;
  // Known also after resolution, so a foreign pause is refused with 403 whatever its state.
  const convId = controller.convOf(command.pause_id);
  if (convId !== undefined) {
    if (command.conv_id !== undefined && command.conv_id !== convId) {
      throw forbidden(`pause "${command.pause_id}" does not belong to conversation "${command.conv_id}"`);
    }
    const session = context.stepwise.sessions.get(convId);
    if (session) assertOwner(caller, session);
  }
  // Validated and resolved here; the run resumes on its own scheduler after the caller has answered.
  const submitted = controller.submit({
    pause_id: command.pause_id,
    ...(command.action ? { action: command.action } : {}),
    ...(command.tool_call_ids ? { tool_call_ids: command.tool_call_ids } : {}),
    ...(command.reason !== undefined ? { reason: command.reason } : {}),
    ...(command.edits ? { edits: command.edits } : {}),
    ...(command.results ? { results: command.results } : {}),
    ...(caller.user ? { by: caller.user } : {}),
  });
  if (!submitted.ok) {
    const { code, message, details } = submitted.error;
    throw new HttpError(SUBMIT_STATUS[code], code, message, details);
  }
  return { ok: true, pause: submitted.pause };
};

/** The session a step-mode request names by `conv_id` or `session_id`. */
function targetSession(context: ServerContext, caller: Caller, body: unknown): Session {
  const target = parseOr400(targetSchema, body);
  if (target.conv_id !== undefined) {
    const session = ownedSession(context, caller, target.conv_id);
    if (target.session_id !== undefined && target.session_id !== session.session_id) {
      throw invalidRequest([{ field: 'session_id', message: `session ${target.session_id} is not conversation ${target.conv_id}'s` }]);
    }
    return session;
  }
  if (target.session_id === undefined) throw invalidRequest([{ field: 'conv_id', message: 'give conv_id or session_id' }]);
  const session = context.stepwise.sessions.list().find((candidate) => candidate.session_id === target.session_id);
  if (!session) throw notFound(`no session "${target.session_id}"`);
  assertOwner(caller, session);
  return session;
}
