import type { Router } from 'express';
import { z } from 'zod';
import { bySoonest, type ListedPause } from '../core/directory.js';
import type { PauseInfo } from '../core/pauses.js';
import { callerFrom, mayAccess, type Caller } from './auth.js';
import { committedOnly } from './commands.js';
import { convIdSchema, ownedConversation, type ServerContext } from './context.js';
import { parseOr400 } from './errors.js';
import { pauseRoute } from './routes-decide.js';
import { count, singleValues } from './routes-conversations.js';
import { loadExpress } from './server-deps.js';

/** The most pauses one listing returns when it asks for a `limit` (`GET /pauses`, the inbox socket's hello). */
export const MAX_INBOX_LIMIT = 10_000;

const inboxQuery = z.object({
  conv_id: convIdSchema.optional(),
  tool: z.string().min(1).max(64).optional(),
  profile: z.string().min(1).max(128).optional(),
  limit: count('limit')
    .refine((limit) => limit >= 1 && limit <= MAX_INBOX_LIMIT, `limit must be 1 to ${MAX_INBOX_LIMIT}`)
    .optional(),
});

/** What the inbox shows of the pending pauses (docs/protocol.md, The inbox). */
export type InboxFilter = z.infer<typeof inboxQuery>;

/** Whether a listed pause is one the caller may answer and the filter asks for. */
export function isShown(listed: ListedPause, caller: Caller, filter: InboxFilter): boolean {
  const { pause } = listed;
  if (!mayAccess(caller, listed.owner)) return false;
  if (filter.conv_id !== undefined && pause.conv_id !== filter.conv_id) return false;
  if (filter.profile !== undefined && (listed.profile ?? null) !== filter.profile) return false;
  return filter.tool === undefined || pause.tool_calls.some((call) => call.name === filter.tool);
}

/**
 * The pauses the caller may answer, soonest deadline first (ties: by pause id, so the order is
 * stable), at most `limit`. One conversation's are few and listed whole; the service's are read
 * soonest first and only as many as asked for (`GET /pauses?limit=20` of 100 000).
 */
export async function inboxPauses(context: ServerContext, caller: Caller, filter: InboxFilter): Promise<PauseInfo[]> {
  const shown = (listed: ListedPause): boolean => isShown(listed, caller, filter);
  const limit = filter.limit ?? Number.POSITIVE_INFINITY;
  const listed =
    filter.conv_id === undefined
      ? await context.directory.soonestPauses(shown, limit)
      : (await context.directory.pauses(filter.conv_id)).filter(shown).sort(bySoonest).slice(0, limit);
  return listed.map(({ pause }) => pause);
}

/** `GET /pauses`: the inbox, across conversations, and `POST /pauses/:pause_id`: a decision (docs/protocol.md, The inbox). */
export function inboxRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.get('/pauses', async (req, res) => {
    const caller = callerFrom(res);
    const filter = parseOr400(inboxQuery, singleValues(req.query), 'query');
    if (filter.conv_id !== undefined) {
      await context.directory.open(filter.conv_id);
      await ownedConversation(context, caller, filter.conv_id);
    }
    // Shown once committed: a pause an approver sees survives a crash of this process the next instant.
    const pauses = await committedOnly(context, await inboxPauses(context, caller, filter));
    res.json({ pauses });
  });
  // Approvals need no debugger (docs/protocol.md, The inbox): any pending pause is answered here.
  router.post('/pauses/:pause_id', pauseRoute(context));
  return router;
}
