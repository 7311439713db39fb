import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import { callerFrom } from './auth.js';
import { convIdSchema, ownedSession, type ServerContext } from './context.js';
import { notFound, parseOr400 } from './errors.js';
import type { InferenceLog } from '../sessions/inference-log.js';

/** `<inference_id>:<n>`, the id of an inference's `llm.*` frames. */
const messageIdSchema = z
  .string()
  .max(300, 'message_id is at most 300 characters')
  .regex(/^[^/]+:[1-9]\d{0,5}$/, 'message_id must be "<inference_id>:<n>", the id of the inference\'s llm.* frames');

/**
 * `GET /conversations/:conv_id/inferences`: the message ids whose requests are kept, oldest first.
 * `GET /conversations/:conv_id/inferences/:message_id`: what was sent to the model for that inference,
 * `{conv_id, message_id, inference_id, turn_id, messages, tools, tool_choice?, parallel_tool_calls?}`,
 * exactly as the engine received it (inference-log.ts says why it is a bounded record).
 */
export function inferenceRoutes(context: ServerContext, log: InferenceLog): Router {
  const router = loadExpress().Router();
  router.get('/conversations/:conv_id/inferences', (req, res) => {
    const conv_id = parseOr400(convIdSchema, req.params['conv_id'], 'conv_id');
    ownedSession(context, callerFrom(res), conv_id);
    res.json({ conv_id, message_ids: log.messageIds(conv_id), kept_per_conversation: log.limits.perConversation });
  });
  router.get('/conversations/:conv_id/inferences/:message_id', (req, res) => {
    const conv_id = parseOr400(convIdSchema, req.params['conv_id'], 'conv_id');
    ownedSession(context, callerFrom(res), conv_id);
    const message_id = parseOr400(messageIdSchema, req.params['message_id'], 'message_id');
    const request = log.get(conv_id, message_id);
    if (!request) {
      const kept = log.limits.perConversation;
      throw notFound(
        `no request kept for inference "${message_id}" of conversation "${conv_id}": the server keeps the last ${kept} per conversation, in memory, since it started`,
        'unknown_inference',
      );
    }
    res.json({
      conv_id,
      message_id,
      inference_id: request.inference_id,
      turn_id: request.turn_id,
      messages: request.blocks,
      tools: request.tools,
      ...(request.toolChoice === undefined ? {} : { tool_choice: request.toolChoice }),
      ...(request.parallelToolCalls === undefined ? {} : { parallel_tool_calls: request.parallelToolCalls }),
    });
  });
  return router;
}
