import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import { callerFrom, mayAccess } from './auth.js';
import { committedOnly } from './commands.js';
import { convIdSchema, ownedConversation, type ServerContext } from './context.js';
import { forbidden, notFound, parseOr400 } from './errors.js';
import { framesReply } from './frame-encoder.js';

/** At most this many frames per `/hydrate` reply: a client pages on with `since_seq` (`last_seq` says how far). */
const MAX_HYDRATE_LIMIT = 10_000;

/** A query parameter that is a count (an integer >= 0). */
export const count = (name: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, `${name} must be a non-negative integer`)
    .transform(Number);

/** The most conversations one listing returns when it asks for a `limit`. */
const MAX_LIST_LIMIT = 10_000;

const listQuery = z.object({
  limit: count('limit')
    .refine((limit) => limit >= 1 && limit <= MAX_LIST_LIMIT, `limit must be 1 to ${MAX_LIST_LIMIT}`)
    .optional(),
});

const hydrateQuery = z.object({
  conv_id: convIdSchema,
  since_seq: count('since_seq').optional(),
  limit: count('limit').optional(),
});

/** `GET /conversations`, `GET /conversations/:conv_id` and `GET /hydrate`. */
export function conversationRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.get('/conversations', async (req, res) => {
    const caller = callerFrom(res);
    const { limit } = parseOr400(listQuery, singleValues(req.query), 'query');
    const mine = (await context.directory.list()).filter((conversation) => mayAccess(caller, conversation.owner));
    if (limit === undefined || mine.length <= limit) {
      res.json({ conversations: mine.map(withoutOwner) });
      return;
    }
    // The newest `limit`, oldest first as the whole list is: a dashboard's sidebar on a server with 100 000.
    const newest = mine.sort((a, b) => a.created_at - b.created_at).slice(-limit);
    res.json({ conversations: newest.map(withoutOwner), truncated: true });
  });

  router.get('/conversations/:conv_id', async (req, res) => {
    const conv_id = parseOr400(convIdSchema, req.params['conv_id'], 'conv_id');
    const conversation = await context.directory.get(conv_id);
    if (!conversation) throw notFound(`no conversation "${conv_id}"`);
    if (!mayAccess(callerFrom(res), conversation.owner)) throw forbidden(`conversation "${conv_id}" belongs to another user`);
    res.json(await committedOnly(context, withoutOwner(conversation)));
  });

  router.get('/hydrate', async (req, res) => {
    const query = parseOr400(hydrateQuery, singleValues(req.query), 'query');
    await context.directory.open(query.conv_id);
    const session = await ownedConversation(context, callerFrom(res), query.conv_id);
    const limit = Math.min(query.limit ?? MAX_HYDRATE_LIMIT, MAX_HYDRATE_LIMIT);
    // Committed frames: from the hub's buffer, or the store's log when they are older (or from before a restart).
    const { frames, lastSeq } = await context.stepwise.frames.read(query.conv_id, query.since_seq ?? 0, limit);
    await context.encoder.prepare(query.conv_id, frames);
    // The very frames the WebSocket sent, as the bytes they were sent as.
    const texts = frames.map((item) => context.encoder.textOf(item));
    res.type('json').send(framesReply({ conv_id: query.conv_id, session_id: session.session_id }, texts, lastSeq));
  });
  return router;
}

/** Query values as single strings: a repeated parameter (`?a=1&a=2`) is refused as not a string. */
export function singleValues(query: unknown): Record<string, unknown> {
  return typeof query === 'object' && query !== null ? { ...(query as Record<string, unknown>) } : {};
}

/** Who a conversation belongs to decides who sees it; it is not shown. */
function withoutOwner<T extends { readonly owner?: string }>(conversation: T): Omit<T, 'owner'> {
  const { owner: _decidesAccess, ...shown } = conversation;
  return shown;
}
