import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import type { Store } from '../core/store.js';
import { callerFrom } from './auth.js';
import { convIdSchema, ownedConversation, type ServerContext } from './context.js';
import { parseOr400 } from './errors.js';

/**
 * `GET /conversations/:conv_id/decisions`: the audit trail (docs/protocol.md, HTTP routes and Durability), oldest
 * first, from the store.
 */
export function decisionRoutes(context: ServerContext, store: Store): Router {
  const router = loadExpress().Router();
  router.get('/conversations/:conv_id/decisions', async (req, res, next) => {
    try {
      const conv_id = parseOr400(convIdSchema, req.params['conv_id'], 'conv_id');
      await context.directory.open(conv_id);
      await ownedConversation(context, callerFrom(res), conv_id);
      const rows = await store.decisions(conv_id);
      // The conversation id is the route's; each row says the rest.
      res.json({ decisions: rows.map(({ conv_id: _conv, ...decision }) => decision) });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
