import { Router } from 'express';
import { z } from 'zod';
import { callerFrom, mayAccess } from './auth.js';
import { committedOnly } from './commands.js';
import { convIdSchema, ownedConversation, ownedSession, type ServerContext } from './context.js';
import type { StepFilter } from '../core/store.js';
import { parseOr400 } from './errors.js';
import { framesReply } from './frame-encoder.js';

/** At most this many frames per `/hydrate` reply: a client pages on with `since_seq` (`last_seq` says how far). */
const MAX_HYDRATE_LIMIT = 10_000;

const count = (name: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, `${name} must be a non-negative integer`)
    .transform(Number);

const hydrateQuery = z.object({
  conv_id: convIdSchema,
  since_seq: count('since_seq').optional(),
  limit: count('limit').optional(),
});

/** `GET /conversations`, `GET /conversations/:conv_id` and `GET /hydrate`. */
export function conversationRoutes(context: ServerContext): Router {
  const router = Router();
  const { sessions, controller } = context.stepwise;

  router.get('/conversations', (_req, res) => {
    const caller = callerFrom(res);
    const conversations = sessions
      .list()
      .filter((session) => mayAccess(caller, session.owner))
      .map((session) => ({
        conv_id: session.conv_id,
        session_id: session.session_id,
        running: session.running,
        step_mode: controller.isEnabled(session.session_id),
        created_at: session.created_at,
        profile: session.profile ?? null,
        ...(session.forked_from ? { forked_from: session.forked_from } : {}),
      }));
    res.json({ conversations });
  });

  router.get('/conversations/:conv_id', async (req, res) => {
    const conv_id = parseOr400(convIdSchema, req.params['conv_id'], 'conv_id');
    const session = ownedSession(context, callerFrom(res), conv_id);
    res.json(await committedOnly(context, {
      conv_id,
      session_id: session.session_id,
      running: session.running,
      step_mode: controller.isEnabled(session.session_id),
      ...stepFilterOf(controller.filterOf(session.session_id)),
      profile: session.profile ?? null,
      ...(session.forked_from ? { forked_from: session.forked_from } : {}),
      turns: session.turns().map((turn) => ({ id: turn.id, blocks: turn.blocks })),
      pending_pauses: controller.pending(session.session_id),
    }));
  });

  router.get('/hydrate', async (req, res) => {
    const query = parseOr400(hydrateQuery, singleValues(req.query), 'query');
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

/**
 * `step_filter` only when step mode has a filter (docs/protocol.md, Breakpoints and result edits: absent means no
 * filter).
 */
const stepFilterOf = (filter: StepFilter | undefined): { step_filter?: StepFilter } => (filter ? { step_filter: filter } : {});
