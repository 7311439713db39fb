import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import { GRANT_SCOPES, type Remember } from '../core/grants.js';
import { publicGrant } from '../sessions/grant-book.js';
import { callerFrom, mayAccess } from './auth.js';
import type { ServerContext } from './context.js';
import { forbidden, notFound, parseOr400 } from './errors.js';

/** The longest a grant may live when it has a `ttl_ms`: about a year; none at all means until revoked. */
const MAX_TTL_MS = 366 * 24 * 3600 * 1000;

/** `remember` on a continue or edit (docs/protocol.md, Grants). */
export const rememberSchema = z.object({
  scope: z.enum(GRANT_SCOPES as [Remember['scope'], ...Remember['scope'][]]),
  tools: z.array(z.string().min(1).max(64)).min(1).max(1000),
  ttl_ms: z.number().int().positive().max(MAX_TTL_MS).optional(),
});

const grantIdSchema = z.string().min(1).max(256);

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
