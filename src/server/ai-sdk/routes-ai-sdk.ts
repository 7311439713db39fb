import type { UIMessage, UIMessageChunk } from 'ai';
import type { Request, Response, Router } from 'express';
import { loadExpress } from '../server-deps.js';
import type { Observable } from 'rxjs';
import { z } from 'zod';
import type { PauseInfo } from '../../core/pauses.js';
import { callerFrom, type Caller } from '../auth.js';
import { convIdSchema, type ServerContext } from '../context.js';
import { HttpError, invalidRequest, parseOr400 } from '../errors.js';
import { startRun } from '../routes-chat.js';
import { startedRun$ } from '../run-view/run-segment.js';
import { decide, openOwned, pendingPause, ViewRefusal, type ViewDecision } from '../run-view/view-decisions.js';
import { toUiChunks } from './ui-chunks.js';

/** The `useChat` request body (`DefaultChatTransport`), with stepwise's one addition (docs/ai-sdk.md, The request). */
const chatSchema = z.object({
  id: convIdSchema,
  messages: z.array(z.unknown()).min(1).max(10_000),
  stepwise: z.strictObject({ step_mode: z.boolean().optional() }).optional(),
});

type AiKit = typeof import('ai');

/** An answered approval of a tool call, as `addToolApprovalResponse` leaves it in the last assistant message. */
interface Approval {
  readonly approvalId: string;
  readonly toolCallId: string;
  readonly approved: boolean;
  readonly reason?: string;
}

/**
 * `POST /ai-sdk/chat` (docs/ai-sdk.md): the `useChat` body in, a UI message stream out. A last user
 * message starts a run as `POST /chat` does; a last assistant message whose approvals are answered
 * is the decision of the pause they belong to, taken through the command port as `/debug/continue`
 * takes it. Either streams the run to its next pause or its end. Refusals are JSON errors before the
 * stream.
 */
export function aiSdkRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  // The `ai` package loads at the first request: a server that never speaks it never pays for it.
  let kit: Promise<AiKit> | undefined;
  router.post('/ai-sdk/chat', async (req: Request, res: Response) => {
    const ai = await (kit ??= import('ai'));
    const body = parseOr400(chatSchema, req.body);
    const validated = await ai.safeValidateUIMessages({ messages: body.messages });
    if (!validated.success) throw invalidRequest([{ field: 'messages', message: validated.error.message }]);
    const chunks$ = await chatRun(context, callerFrom(res), body, validated.data);
    const stream = ai.createUIMessageStream({
      execute: ({ writer }) =>
        new Promise<void>((resolve) => {
          const subscription = chunks$.subscribe({ next: (chunk) => writer.write(chunk), error: () => (writer.write({ type: 'error', errorText: 'internal server error' }), resolve()), complete: resolve });
          // A client that goes away leaves the run as it is (docs/ai-sdk.md, Disconnects).
          res.once('close', () => (subscription.unsubscribe(), resolve()));
        }),
    });
    ai.pipeUIMessageStreamToResponse({ response: res, stream });
  });
  return router;
}

async function chatRun(context: ServerContext, caller: Caller, body: z.infer<typeof chatSchema>, messages: UIMessage[]): Promise<Observable<UIMessageChunk>> {
  const last = messages[messages.length - 1];
  const approvals = last?.role === 'assistant' ? approvalsOf(last) : [];
  if (approvals.length > 0) return approvedRun(context, caller, body.id, approvals);
  if (last?.role !== 'user') throw invalidRequest([{ field: 'messages', message: 'the last message must be a user message, or an assistant message with answered approvals' }]);
  const prompt = last.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n').trim();
  if (prompt === '') throw invalidRequest([{ field: 'messages', message: 'the last user message has no text' }]);
  const stepMode = body.stepwise?.step_mode;
  const run = await startRun(context, caller, { prompt, conv_id: body.id, ...(stepMode === undefined ? {} : { overrides: { step_mode: stepMode } }) });
  return startedRun$(context.stepwise.frames, body.id, run.since_seq, run.handle.inference_id).pipe(toUiChunks());
}

/** The tool parts of a message whose approval was answered (`approval-responded`). */
function approvalsOf(message: UIMessage): Approval[] {
  return message.parts.flatMap((part) => {
    if (!('approval' in part) || part.state !== 'approval-responded' || !part.approval) return [];
    const { id, approved, reason } = part.approval;
    return [{ approvalId: id, toolCallId: part.toolCallId, approved, ...(reason === undefined ? {} : { reason }) }];
  });
}

/**
 * The decision the answered approvals are (docs/ai-sdk.md, Approvals): they must answer every call of
 * one pending pause. All approved is `continue`; denied ones are `deny` with their reasons.
 */
async function approvedRun(context: ServerContext, caller: Caller, convId: string, approvals: readonly Approval[]): Promise<Observable<UIMessageChunk>> {
  await openOwned(context, caller, convId);
  try {
    const pause = await pendingPause(context, convId, approvals[0]?.approvalId.split(':')[0] ?? '');
    const decision = decisionOf(pause, approvals);
    const events$ = await decide(context, caller, pause, decision);
    const denied = new Set(decision.action === 'deny' ? decision.tool_call_ids : []);
    // `start` names no message: the client goes on with the assistant message the approvals are in.
    return events$.pipe(toUiChunks({ denied }));
  } catch (error) {
    if (!(error instanceof ViewRefusal)) throw error;
    throw new HttpError(error.status, error.code, error.message, undefined, undefined, error.retry_after_s);
  }
}

function decisionOf(pause: PauseInfo, approvals: readonly Approval[]): ViewDecision {
  // By the call its approvalId names: a child run's call is `<inference_id>:<tool_call_id>` to the client (ui-chunks.ts).
  const prefix = `${pause.pause_id}:`;
  const callOf = (approval: Approval): string => (approval.approvalId.startsWith(prefix) ? approval.approvalId.slice(prefix.length) : '');
  const byCall = new Map(approvals.map((approval) => [callOf(approval), approval]));
  const open = pause.tool_calls.filter((call) => !byCall.has(call.id));
  if (pause.phase !== 'after_inference' || open.length > 0) {
    throw invalidResume(`the approvals must answer every call of pause ${pause.pause_id}; unanswered: ${open.map((call) => call.id).join(', ') || pause.phase}`);
  }
  const denied = approvals.filter((approval) => !approval.approved);
  if (denied.length === 0) return { action: 'continue' };
  const reasons = [...new Set(denied.flatMap((approval) => (approval.reason?.trim() ? [approval.reason.trim()] : [])))];
  return { action: 'deny', tool_call_ids: denied.map(callOf), ...(reasons.length > 0 ? { reason: reasons.join('; ') } : {}) };
}

const invalidResume = (message: string): HttpError => new HttpError(400, 'invalid_resume', message);
