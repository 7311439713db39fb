import { Router } from 'express';
import type { FrameEvent, Store } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';
import { callerFrom, mayAccess } from '../server/auth.js';
import { storeStep } from './route-steps.js';
import { serviceRoutes, wirePause } from './service-routes.js';

export interface ClusterRoutePorts {
  readonly stepwise: Stepwise;
  readonly store: Store<FrameEvent>;
  readonly debug: boolean;
  /** Makes a conversation another instance created known here. */
  readonly join: (convId: string) => Promise<void>;
}

/**
 * What makes the read routes the whole service's (docs/protocol.md, Several instances), in front of
 * the single-process ones: `GET /debug/pauses` lists the service's pauses from the store, and the
 * conversation routes answer from it (./service-routes.ts). Commands need nothing here: they go
 * through the command port to the run's owner, and `POST /chat` claims the run's lease itself.
 */
export function clusterRoutes(ports: ClusterRoutePorts): Router {
  const router = Router();
  router.get(
    '/debug/pauses',
    storeStep(async (req, res) => {
      if (!ports.debug) return false;
      const convId = typeof req.query['conv_id'] === 'string' ? req.query['conv_id'] : undefined;
      if (convId !== undefined) await ports.join(convId);
      const caller = callerFrom(res);
      // This instance's pauses as listed now, shown once committed (see `committedOnly`).
      const local = ports.stepwise.controller.pending();
      await ports.store.flush();
      const [stored, conversations] = await Promise.all([ports.store.pauses(convId), ports.store.conversations()]);
      const allowed = new Set(conversations.filter((c) => mayAccess(caller, c.owner)).map((c) => c.conv_id));
      if (convId !== undefined && !allowed.has(convId)) return false;
      const known = new Set(local.map((pause) => pause.pause_id));
      const remote = stored.filter((pause) => !known.has(pause.pause_id)).map(wirePause);
      res.json({ pauses: [...local, ...remote].filter((pause) => allowed.has(pause.conv_id)) });
      return true;
    }),
  );
  router.use(serviceRoutes({ stepwise: ports.stepwise, store: ports.store, join: ports.join }));
  return router;
}
