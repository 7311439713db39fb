import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { RunInProgressError } from '../sessions/session.js';
import { callerFrom } from './auth.js';
import { assertOwner, convIdSchema, ownedSession, type ServerContext } from './context.js';
import { HttpError, invalidRequest, parseOr400 } from './errors.js';

const chatSchema = z.object({
  prompt: z.string().min(1, 'prompt must be a non-empty string'),
  conv_id: convIdSchema.optional(),
  overrides: z
    .strictObject({
      step_mode: z.boolean().optional(),
      tools: z.array(z.string()).optional(),
      system_prompt: z.string().optional(),
      max_iterations: z.number().int().min(1).max(1000).optional(),
    })
    .optional(),
});

const cancelSchema = z.object({ conv_id: convIdSchema });

/** `POST /chat` and `POST /chat/cancel`. */
export function chatRoutes(context: ServerContext): Router {
  const router = Router();
  router.post('/chat', (req, res) => startChat(context, req, res));
  router.post('/chat/cancel', (req: Request, res: Response) => {
    const { conv_id } = parseOr400(cancelSchema, req.body);
    const session = ownedSession(context, callerFrom(res), conv_id);
    res.json({ ok: true, cancelled: session.cancel() });
  });
  return router;
}

function startChat(context: ServerContext, req: Request, res: Response): void {
  const body = parseOr400(chatSchema, req.body);
  const caller = callerFrom(res);
  const { sessions, registry, controller } = context.stepwise;
  const overrides = body.overrides ?? {};
  const existing = body.conv_id === undefined ? undefined : sessions.get(body.conv_id);
  if (existing) assertOwner(caller, existing);
  if (overrides.step_mode === true && !context.debug) {
    throw new HttpError(403, 'debug_disabled', 'step mode needs debug mode (start the server with --debug)');
  }
  // Checked before the conversation is created, so a refused request leaves nothing behind.
  const unknown = overrides.tools ? registry.unknown(overrides.tools) : [];
  if (unknown.length > 0) {
    throw invalidRequest(
      unknown.map((name) => ({ field: 'overrides.tools', message: `unknown tool "${name}"` })),
      `unknown tool names: ${unknown.join(', ')} (known: ${registry.names().join(', ') || 'none'})`,
    );
  }
  const session = existing ?? sessions.open({ ...(body.conv_id ? { conv_id: body.conv_id } : {}), ...(caller.user ? { owner: caller.user } : {}) });
  const identity = { conv_id: session.conv_id, session_id: session.session_id };
  if (session.running) throw runInProgress(identity);
  if (overrides.step_mode === true) controller.enable(session.session_id);
  if (overrides.step_mode === false && context.debug) controller.disable(session.session_id);
  try {
    const handle = session.start({
      prompt: body.prompt,
      overrides: {
        ...(overrides.tools ? { tools: overrides.tools } : {}),
        ...(overrides.system_prompt !== undefined ? { system_prompt: overrides.system_prompt } : {}),
        ...(overrides.max_iterations !== undefined ? { max_iterations: overrides.max_iterations } : {}),
      },
    });
    res.json({ ...identity, turn_id: handle.turn_id, inference_id: handle.inference_id });
  } catch (error) {
    if (error instanceof RunInProgressError) throw runInProgress(identity);
    throw error;
  }
}

function runInProgress(identity: { conv_id: string; session_id: string }): HttpError {
  return new HttpError(409, 'run_in_progress', `conversation ${identity.conv_id} already has a run in progress`, undefined, identity);
}
