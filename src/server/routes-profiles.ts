import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import type { ServerContext } from './context.js';
import { describeProfile } from './profiles.js';

/** `GET /profiles`: `{profiles: [{slug, description, tools}]}`, empty when the server has none. */
export function profileRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.get('/profiles', (_req, res) => {
    const toolNames = context.stepwise.registry.names();
    res.json({ profiles: [...context.profiles.values()].map((profile) => describeProfile(profile, toolNames)) });
  });
  return router;
}
