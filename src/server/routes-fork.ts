import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import { ForkError } from '../sessions/fork.js';
import { callerFrom } from './auth.js';
import { convIdSchema, ownedSession, type ServerContext } from './context.js';
import { HttpError, parseOr400 } from './errors.js';
import { profileChoices } from './profiles.js';

const idSchema = (name: string) => z.string().min(1, `${name} must be a non-empty string`).max(256, `${name} is at most 256 characters`);

const forkSchema = z
  .strictObject({ turn_id: idSchema('turn_id').optional(), pause_id: idSchema('pause_id').optional() })
  .refine((body) => body.turn_id === undefined || body.pause_id === undefined, {
    message: 'give turn_id or pause_id, not both',
    path: ['pause_id'],
  });

/** Unknown turn or pause: 404; a turn still running or a pause already resolved: 409 (docs/protocol.md, Forks). */
const STATUS: Readonly<Record<ForkError['code'], number>> = Object.freeze({
  unknown_turn: 404,
  unknown_pause: 404,
  turn_running: 409,
  pause_resolved: 409,
});

/**
 * `POST /conversations/:conv_id/fork {turn_id?, pause_id?}` (docs/protocol.md, Forks) -> `{conv_id, session_id,
 * forked_from, pause_id?}`.
 */
export function forkRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.post('/conversations/:conv_id/fork', async (req, res, next) => {
    try {
      const conv_id = parseOr400(convIdSchema, req.params['conv_id'], 'conv_id');
      const caller = callerFrom(res);
      const source = ownedSession(context, caller, conv_id);
      const body = parseOr400(forkSchema, req.body ?? {});
      // The fork runs as its source did: the same profile's engine and tools.
      const profile = source.profile === undefined ? undefined : context.profiles.get(source.profile);
      const { session, pause_id } = await context.stepwise.fork({
        source,
        ...body,
        ...(caller.user === undefined ? {} : { owner: caller.user }),
        ...(profile ? { choices: profileChoices(profile) } : {}),
      });
      res.json({ conv_id: session.conv_id, session_id: session.session_id, forked_from: session.forked_from, ...(pause_id ? { pause_id } : {}) });
    } catch (error) {
      next(error instanceof ForkError ? new HttpError(STATUS[error.code], error.code, error.message) : error);
    }
  });
  return router;
}
