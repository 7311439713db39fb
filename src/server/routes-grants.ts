import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import { GRANT_SCOPES, type GrantRecord, type Remember } from '../core/grants.js';
import { grantTargetOf } from '../sessions/grant-book.js';
import { callerFrom, mayAccess, type Caller } from './auth.js';
import type { ServerContext } from './context.js';
import { forbidden, HttpError, invalidRequest, notFound, parseOr400 } from './errors.js';

/** The longest a grant may live when it has a `ttl_ms`: about a year; none at all means until revoked. */
const MAX_TTL_MS = 366 * 24 * 3600 * 1000;

/** `remember` on a continue or edit (docs/protocol.md, Grants). */
export const rememberSchema = z.object({
  scope: z.enum(GRANT_SCOPES as [Remember['scope'], ...Remember['scope'][]]),
  tools: z.array(z.string().min(1).max(64)).min(1).max(1000),
  ttl_ms: z.number().int().positive().max(MAX_TTL_MS).optional(),
});

const grantIdSchema = z.string().min(1).max(256);

/** A grant as the wire shows it: whose conversations it covers stays the server's. */
export const publicGrant = ({ owner: _owner, ...grant }: GrantRecord): Omit<GrantRecord, 'owner'> => grant;

/** `GET /grants` and `DELETE /grants/:grant_id` (docs/protocol.md, Grants); owner rules as conversations. */
export function grantRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  const { grants } = context.stepwise;
  router.get('/grants', async (_req, res) => {
    const caller = callerFrom(res);
    const live = await grants.live();
    res.json({ grants: live.filter((grant) => mayAccess(caller, grant.owner)).map(publicGrant) });
  });
  router.delete('/grants/:grant_id', async (req, res) => {
    const grantId = parseOr400(grantIdSchema, req.params['grant_id'], 'grant_id');
    const grant = (await grants.live()).find((candidate) => candidate.grant_id === grantId);
    if (!grant) throw notFound(`no grant "${grantId}"`);
    if (!mayAccess(callerFrom(res), grant.owner)) throw forbidden(`grant "${grantId}" belongs to another user`);
    // Committed before the reply: from the next pending call on, on every instance, it no longer applies.
    await grants.revoke(grantId);
    res.json({ ok: true, grant_id: grantId });
  });
  return router;
}

/**
 * A continue's `remember`, checked before the decision is submitted (a refused command changes nothing) and made
 * once it was accepted: returns the maker, or undefined without `remember`.
 */
export function prepareGrant(
  context: ServerContext,
  caller: Caller,
  convId: string | undefined,
  command: { readonly action?: string; readonly remember?: Remember | undefined },
): (() => Promise<GrantRecord>) | undefined {
  const { remember } = command;
  if (remember === undefined) return undefined;
  // An answer is for one question: a human answers each time (docs/protocol.md, Questions for a human).
  if (command.action === 'deny' || command.action === 'answer') {
    throw new HttpError(400, 'invalid_action', `"remember" goes with continue or edit, not ${command.action}`);
  }
  const target = grantTargetOf(convId === undefined ? undefined : context.stepwise.sessions.get(convId));
  // No local session: the pause is unknown here, and the submit says so.
  if (!target) return undefined;
  const { grants, registry } = context.stepwise;
  const issues = grants.issues(target, remember, (name) => registry.get(name)?.grantable !== false);
  if (issues.length > 0) throw invalidRequest(issues, 'this cannot be remembered');
  return () => grants.remember(target, remember, caller.user ?? 'local');
}
