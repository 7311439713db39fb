import { Router } from 'express';
import type { ConversationRecord, FrameEvent, Store, StoredPause } from '../core/store.js';
import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';
import { callerFrom, mayAccess } from '../server/auth.js';
import { isConvId, storeStep } from './route-steps.js';

export interface ServiceRoutePorts {
  readonly stepwise: Stepwise;
  readonly store: Store<FrameEvent>;
  /** Makes a conversation another instance created known here. */
  readonly join: (convId: string) => Promise<void>;
}

/**
 * The read routes as the whole service's (docs/protocol.md, Several instances), in front of the single-process ones:
 * - `GET /conversations` lists every instance's conversations from the store; a run is in progress
 *   when it has a checkpoint there, wherever it executes.
 * - `GET /conversations/:conv_id` of a conversation whose run does not execute here answers from the
 *   store (a session adopted here earlier holds the turns of then; the owner goes on storing them).
 * - `/hydrate` and `/conversations/:conv_id/decisions` bring the conversation here first (its session
 *   and seq), then the usual route answers from the committed log.
 * A store that cannot be read is a 503 `store_unavailable`.
 */
export function serviceRoutes(ports: ServiceRoutePorts): Router {
  const router = Router();
  const { stepwise, store } = ports;
  const runningHere = (convId: string): Session | undefined => {
    const session = stepwise.sessions.get(convId);
    return session?.running ? session : undefined;
  };
  const joined = async (convId: unknown): Promise<false> => {
    if (isConvId(convId)) await ports.join(convId);
    return false;
  };

  router.get(
    '/conversations',
    storeStep(async (_req, res) => {
      const caller = callerFrom(res);
      const [records, checkpoints] = await Promise.all([store.conversations(), store.checkpoints()]);
      const unfinished = new Set(checkpoints.map((checkpoint) => checkpoint.conv_id));
      const conversations = records
        .filter((record) => mayAccess(caller, record.owner))
        .map((record) => ({
          ...summary(record),
          running: runningHere(record.conv_id) !== undefined || unfinished.has(record.conv_id),
          step_mode: stepModeOf(stepwise, record),
        }));
      res.json({ conversations });
      return true;
    }),
  );

  router.get(
    '/conversations/:conv_id',
    storeStep(async (req, res) => {
      const convId = req.params['conv_id'];
      if (!isConvId(convId) || runningHere(convId)) return false;
      const [record, turns, pauses, checkpoints] = await Promise.all([store.conversation(convId), store.turns(convId), store.pauses(convId), store.checkpoints(convId)]);
      // Unknown, or someone else's: the usual route says so in its words.
      if (!record || !mayAccess(callerFrom(res), record.owner)) return false;
      const { created_at: _listedOnly, ...identity } = summary(record);
      res.json({
        ...identity,
        running: checkpoints.length > 0,
        step_mode: stepModeOf(stepwise, record),
        ...(record.step.filter ? { step_filter: record.step.filter } : {}),
        turns: turns.map((turn) => ({ id: turn.id, blocks: turn.blocks })),
        pending_pauses: pauses.map(wirePause),
      });
      return true;
    }),
  );

  router.get('/conversations/:conv_id/decisions', storeStep((req) => joined(req.params['conv_id'])));
  router.get('/hydrate', storeStep((req) => joined(req.query['conv_id'])));
  return router;
}

/** The fields `GET /conversations` shows of any conversation. */
function summary(record: ConversationRecord): Record<string, unknown> {
  return {
    conv_id: record.conv_id,
    session_id: record.session_id,
    created_at: record.created_at,
    profile: record.profile ?? null,
    ...(record.forked_from ? { forked_from: record.forked_from } : {}),
  };
}

/** Step mode as this instance's controller has it when the session is here (it stores every change), else as stored. */
function stepModeOf(stepwise: Stepwise, record: ConversationRecord): boolean {
  const session = stepwise.sessions.get(record.conv_id);
  return session?.running ? stepwise.controller.isEnabled(session.session_id) : record.step.enabled;
}

/** A stored pause as the routes show it (docs/protocol.md, The pause object: tool_calls only at after_inference). */
export function wirePause(pause: StoredPause): { readonly conv_id: string } {
  const { tool_calls, ...rest } = pause;
  if (pause.phase !== 'after_inference') return rest;
  return Object.assign(rest, { tool_calls: tool_calls.map(({ id, name, input }) => ({ id, name, input })) });
}
