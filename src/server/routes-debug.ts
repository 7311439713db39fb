import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import type { Session } from '../sessions/session.js';
import type { ContinueCommand } from '../streams/step-commands.js';
import { callerFrom, mayAccess, type Caller } from './auth.js';
import { assertDebug, assertOwner, convIdSchema, ownedConversation, ownedSession, type ServerContext } from './context.js';
import { commandRoute, committed, committedOnly, convIdOfBody, decisionCommitted, type StepCommand } from './commands.js';
import { forbidden, HttpError, invalidRequest, notFound, parseOr400, tryAgain } from './errors.js';
import { singleValues } from './routes-conversations.js';
import { prepareGrant, publicGrant, rememberSchema } from './routes-grants.js';

const targetSchema = z.object({ conv_id: convIdSchema.optional(), session_id: z.string().min(1).max(256).optional() });

/**
 * Step mode with a filter (docs/protocol.md, Breakpoints and result edits): no `tools` means every tool, no `phases`
 * both phases.
 */
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
  answers: z.record(z.string(), z.unknown()).optional(),
  remember: rememberSchema.optional(),
});

const pausesQuery = z.object({ conv_id: convIdSchema.optional() });

/** Step control over HTTP: `/debug/step/enable|disable`, `/debug/continue`, `/debug/pauses`. */
export function debugRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.use('/debug', (_req, _res, next) => {
    assertDebug(context);
    next();
  });

  router.post('/debug/step/enable', commandRoute(context, '/debug/step/enable', convIdOfBody));
  router.post('/debug/step/disable', commandRoute(context, '/debug/step/disable', convIdOfBody));
  // The pause's own conversation, wherever its run is; else the one the body names.
  router.post('/debug/continue', commandRoute(context, '/debug/continue', async (body) => (await pauseConv(context, body)) ?? (await convIdOfBody(body))));

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

export const enableStep: StepCommand = async (context, caller, body) => {
  assertDebug(context);
  const { tools, phases } = parseOr400(enableSchema, body);
  const session = targetSession(context, caller, body);
  const filter = { ...(tools ? { tools } : {}), ...(phases ? { phases: [...new Set(phases)] } : {}) };
  context.stepwise.controller.enable(session.session_id, tools || phases ? filter : undefined);
  await committed(context, session.conv_id);
  return { ok: true, session_id: session.session_id, conv_id: session.conv_id };
};

export const disableStep: StepCommand = async (context, caller, body) => {
  assertDebug(context);
  const session = targetSession(context, caller, body);
  const released = context.stepwise.controller.disable(session.session_id);
  await committed(context, session.conv_id);
  return { ok: true, session_id: session.session_id, released };
};

const ACTIONS: readonly string[] = ['continue', 'deny', 'edit', 'answer'] satisfies readonly NonNullable<ContinueCommand['action']>[];
const isAction = (action: string): action is NonNullable<ContinueCommand['action']> => ACTIONS.includes(action);

const SUBMIT_STATUS = { unknown_pause: 404, pause_resolved: 409, invalid_action: 400, invalid_arguments: 400 } as const;

export const continuePause: StepCommand = async (context, caller, body, convHint) => {
  assertDebug(context);
  const command = parseOr400(continueSchema, body);
  if (command.action !== undefined && !isAction(command.action)) {
    // Refused before the pause is looked up: the request is wrong whichever pause it names.
    throw new HttpError(400, 'invalid_action', `unknown action "${command.action}" (continue, deny, edit or answer)`);
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
  const makeGrant = prepareGrant(context, caller, convId, command);
  // Validated and resolved here; the run resumes on its own scheduler after the caller has answered.
  const submitted = controller.submit({
    pause_id: command.pause_id,
    ...(command.action ? { action: command.action } : {}),
    ...(command.tool_call_ids ? { tool_call_ids: command.tool_call_ids } : {}),
    ...(command.reason !== undefined ? { reason: command.reason } : {}),
    ...(command.edits ? { edits: command.edits } : {}),
    ...(command.results ? { results: command.results } : {}),
    ...(command.answers ? { answers: command.answers } : {}),
    // A signed link's decision is recorded as the link's (docs/protocol.md, Webhooks and signed links).
    ...((caller.by ?? caller.user) ? { by: caller.by ?? caller.user } : {}),
  });
  if (!submitted.ok) {
    const { code, message, details } = submitted.error;
    if (code === 'unknown_pause' && convHint !== undefined) await refuseStoredPause(context, caller, convHint, command.pause_id);
    throw new HttpError(SUBMIT_STATUS[code], code, message, details);
  }
  // Made while the decision commits: the resumed run, handed back once it has, already meets the grant.
  const made = makeGrant && (await makeGrant());
  // A 200 means the decision is recorded: it survives a crash of this process the next instant. One
  // the store refused took no effect (the pause is pending again, its grant revoked) and is answered with why.
  await decisionCommitted(submitted.committed$).catch(async (error: unknown) => {
    if (made) await context.stepwise.grants.revoke(made.grant_id);
    throw error;
  });
  const grant = made && publicGrant(made);
  return { ok: true, pause: submitted.pause, ...(grant ? { grant } : {}) };
};

/**
 * A pause this process does not hold, as the store has it: pending, its run is being taken over here
 * (or was just lost): 503, try again; decided before (by an owner before a takeover or a restart): 409.
 */
async function refuseStoredPause(context: ServerContext, caller: Caller, convId: string, pauseId: string): Promise<void> {
  const { store } = context.stepwise;
  const conversation = await store.conversation(convId);
  if (!conversation) return;
  if (!mayAccess(caller, conversation.owner)) throw forbidden(`conversation "${convId}" belongs to another user`);
  if ((await store.pauses(convId)).some((pause) => pause.pause_id === pauseId)) {
    throw tryAgain('pause_not_ready', `pause "${pauseId}" is being taken over by another instance; send the decision again`);
  }
  const decided = (await store.decisions(convId)).find((decision) => decision.pause_id === pauseId);
  if (decided) throw new HttpError(409, 'pause_resolved', `pause "${pauseId}" was already resolved (${decided.reason})`, { reason: decided.reason });
}

/** The conversation of the pause a continue names, wherever its run is. */
const pauseConv = (context: ServerContext, body: unknown): Promise<string | undefined> => {
  const pauseId = (body as { pause_id?: unknown } | undefined)?.pause_id;
  return typeof pauseId === 'string' && pauseId.length > 0 && pauseId.length <= 256 ? context.commands.convOfPause(pauseId) : Promise.resolve(undefined);
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
