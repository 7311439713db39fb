import { Router, type Request, type Response } from 'express';
import type { FrameEvent, Store } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';
import { callerFrom, mayAccess } from '../server/auth.js';
import { errorBody } from '../server/errors.js';
import type { Commands } from './commands.js';
import type { ClusterStore } from './index.js';
import type { Leases } from './lease.js';
import { isConvId, storeStep, type RouteStep } from './route-steps.js';
import { serviceRoutes, wirePause } from './service-routes.js';

export interface ClusterRoutePorts {
  readonly stepwise: Stepwise;
  readonly store: Store<FrameEvent> & Pick<ClusterStore, 'pause'>;
  readonly leases: Leases;
  readonly commands: Commands;
  readonly instanceId: string;
  readonly debug: boolean;
  /** Makes a conversation another instance created known here. */
  readonly join: (convId: string) => Promise<void>;
  /** The conversation of a pause whose frame this instance relayed (see pause-index.ts). */
  readonly convOfPause: (pauseId: string) => string | undefined;
}

const convIdOf = (body: unknown): string | undefined => {
  const convId = (body as { conv_id?: unknown } | undefined)?.conv_id;
  return isConvId(convId) ? convId : undefined;
};

/**
 * What makes the routes one service's (SPEC §7), in front of the single-process routes: a request
 * about a run another instance owns is delivered to it and its answer is the reply; `POST /chat`
 * takes the conversation's lease first (409 `run_in_progress` while another instance holds it);
 * `GET /debug/pauses` lists the service's pauses from the store. Anything else goes on to the usual
 * route, after the conversation is brought here from the store.
 */
export function clusterRoutes(ports: ClusterRoutePorts): Router {
  const router = Router();
  const { leases, commands, instanceId } = ports;
  const otherOwner = async (convId: string): Promise<string | undefined> => {
    const holder = await leases.holder(convId);
    return holder !== null && holder !== instanceId ? holder : undefined;
  };
  const forward = async (owner: string, req: Request, res: Response): Promise<void> => {
    const authorization = req.headers.authorization;
    const reply = await commands.send(owner, { method: req.method, path: req.originalUrl, body: req.body, ...(authorization ? { authorization } : {}) });
    if (reply) res.status(reply.status).json(reply.body);
    else res.status(503).json(errorBody('owner_unavailable', `the instance running this conversation did not answer; try again`));
  };

  // `/chat/:profile` starts a run as `/chat` does (and must hold the lease the same way).
  router.post(
    ['/chat', '/chat/:profile'],
    storeStep(async (req, res) => {
      if (req.params['profile'] === 'cancel') return false;
      const convId = convIdOf(req.body);
      if (convId === undefined) {
        // A new conversation: nobody else knows it, its lease is taken once its run started.
        res.once('finish', () => void leases.sync().catch(() => undefined));
        return false;
      }
      // The lease first, then the conversation as the store has it: a run another instance ended just
      // before is in it (its turns and script position), so this run goes on from there.
      const owned = await leases.acquire(convId);
      await ports.join(convId);
      if (!owned) {
        const session = ports.stepwise.sessions.get(convId);
        res.status(409).json({
          conv_id: convId,
          ...(session ? { session_id: session.session_id } : {}),
          ...errorBody('run_in_progress', `conversation ${convId} already has a run in progress (on another instance)`),
        });
        return true;
      }
      // Released at once when the request started no run.
      res.once('finish', () => void leases.sync().catch(() => undefined));
      return false;
    }),
  );

  const toOwner: RouteStep = async (req, res) => {
    const convId = convIdOf(req.body);
    if (convId === undefined) return false;
    const owner = await otherOwner(convId);
    if (owner === undefined) {
      await ports.join(convId);
      return false;
    }
    await forward(owner, req, res);
    return true;
  };
  router.post('/chat/cancel', storeStep(toOwner));
  router.post('/debug/step/enable', storeStep(toOwner));
  router.post('/debug/step/disable', storeStep(toOwner));

  router.post(
    '/debug/continue',
    storeStep(async (req, res) => {
      const pauseId = (req.body as { pause_id?: unknown } | undefined)?.pause_id;
      if (typeof pauseId !== 'string' || ports.stepwise.controller.get(pauseId) !== undefined) return false;
      // A pending pause names its conversation; a resolved one is known by its owner only, so a
      // request that names the conversation reaches the owner's `pause_resolved`.
      // Known from its frame, else read by id (reading every stored pause made each continue cost more
      // as the service grew).
      const convId = ports.convOfPause(pauseId) ?? (await ports.store.pause(pauseId))?.conv_id ?? convIdOf(req.body);
      if (convId === undefined) return false;
      const owner = await otherOwner(convId);
      if (owner === undefined) return false;
      await forward(owner, req, res);
      return true;
    }),
  );

  router.get(
    '/debug/pauses',
    storeStep(async (req, res) => {
      if (!ports.debug) return false;
      const convId = typeof req.query['conv_id'] === 'string' ? req.query['conv_id'] : undefined;
      if (convId !== undefined) {
        await ports.join(convId);
        if (!(await otherOwner(convId))) return false;
      }
      const caller = callerFrom(res);
      const [stored, conversations] = await Promise.all([ports.store.pauses(convId), ports.store.conversations()]);
      const allowed = new Set(conversations.filter((c) => mayAccess(caller, c.owner)).map((c) => c.conv_id));
      if (convId !== undefined && !allowed.has(convId)) return false;
      const local = ports.stepwise.controller.pending();
      const known = new Set(local.map((pause) => pause.pause_id));
      const remote = stored.filter((pause) => !known.has(pause.pause_id)).map(wirePause);
      res.json({ pauses: [...local, ...remote].filter((pause) => allowed.has(pause.conv_id)) });
      return true;
    }),
  );
  router.use(serviceRoutes({ stepwise: ports.stepwise, store: ports.store, join: ports.join }));
  return router;
}
