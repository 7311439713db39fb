import type { Router } from 'express';
import { z } from 'zod';
import type { ListedPause } from '../core/directory.js';
import type { PauseInfo } from '../core/pauses.js';
import { callerFrom, mayAccess, type Caller } from './auth.js';
import { committedOnly } from './commands.js';
import { convIdSchema, ownedConversation, type ServerContext } from './context.js';
import { parseOr400 } from './errors.js';
import { singleValues } from './routes-conversations.js';
import { loadExpress } from './server-deps.js';

const inboxQuery = z.object({
  conv_id: convIdSchema.optional(),
  tool: z.string().min(1).max(64).optional(),
  profile: z.string().min(1).max(128).optional(),
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

/** The pauses the caller may answer, soonest deadline first (ties: by pause id, so the order is stable). */
export async function inboxPauses(context: ServerContext, caller: Caller, filter: InboxFilter): Promise<PauseInfo[]> {
  const listed = await context.directory.pauses(filter.conv_id);
  const shown = listed.filter((item) => isShown(item, caller, filter)).map(({ pause }) => pause);
  return shown.sort((a, b) => a.deadline_ms - b.deadline_ms || (a.pause_id < b.pause_id ? -1 : a.pause_id > b.pause_id ? 1 : 0));
}

/** `GET /pauses`: the inbox, across conversations (docs/protocol.md, The inbox). */
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
  return router;
}
