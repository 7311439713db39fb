import type { AGUIEvent, RunAgentInput, contentToText } from '@ag-ui/core';
import { loadAgUiCore as agUi } from '../server-deps.js';
import type { Request, Response, Router } from 'express';
import { loadExpress } from '../server-deps.js';
import { catchError, concat, defer, mergeMap, of, type Observable } from 'rxjs';
import { z } from 'zod';
import type { PauseInfo } from '../../core/pauses.js';
import type { StepwiseEvent } from '../../streams/events.js';
import { callerFrom, type Caller } from '../auth.js';
import type { ServerContext } from '../context.js';
import { convIdSchema } from '../context.js';
import { invalidRequest, parseOr400 } from '../errors.js';
import { startRun } from '../routes-chat.js';
import { startedRun$ } from '../run-view/run-segment.js';
import { decide, openOwned, parametersOf, pendingPause, ViewRefusal } from '../run-view/view-decisions.js';
import { decisionOf, interruptsOf, InvalidResume, pauseIdOf } from './ag-ui-interrupts.js';
import { toAgUiEvents } from './ag-ui-events.js';
import { streamSse } from './sse-response.js';

/** Step mode for an AG-UI run (docs/ag-ui.md, Starting a run): `forwardedProps.stepwise.step_mode`. */
const forwardedSchema = z.object({ stepwise: z.strictObject({ step_mode: z.boolean().optional() }).optional() }).optional();

/** The protocol's own pieces, loaded at the first request: a server that never speaks AG-UI never loads them. */
interface AgUiKit {
  readonly parseInput: (body: unknown) => RunAgentInput;
  readonly encode: (event: AGUIEvent) => string;
}

/**
 * `POST /ag-ui` and `POST /ag-ui/:profile` (docs/ag-ui.md): a `RunAgentInput` in, an AG-UI event
 * stream out (SSE). Without `resume` it starts a run as `POST /chat` does (same checks, same
 * refusals as JSON errors before any stream); with `resume` it answers the pause the run waits at,
 * through the command port as `/debug/continue` does. Either streams the run to its next pause
 * (`RUN_FINISHED` outcome `interrupt`) or its end.
 */
export function agUiRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  let kit: Promise<AgUiKit> | undefined;
  const load = (): Promise<AgUiKit> => (kit ??= loadKit());
  router.post(['/ag-ui', '/ag-ui/:profile'], async (req: Request, res: Response) => {
    const { parseInput, encode } = await load();
    const slug = typeof req.params['profile'] === 'string' ? req.params['profile'] : undefined;
    const events$ = await agUiRun(context, callerFrom(res), parseInput(req.body), slug);
    streamSse(res, events$, encode, failed);
  });
  return router;
}

async function loadKit(): Promise<AgUiKit> {
  const [{ RunAgentInputSchema }, { EventEncoder }] = await Promise.all([import('@ag-ui/core/schemas'), import('@ag-ui/encoder')]);
  const encoder = new EventEncoder();
  return {
    parseInput: (body) => parseOr400(RunAgentInputSchema as unknown as z.ZodType<RunAgentInput>, body),
    encode: (event) => encoder.encodeSSE(event),
  };
}

/** The events of one AG-UI run, or a thrown `HttpError` when the request is refused before its stream. */
async function agUiRun(context: ServerContext, caller: Caller, input: RunAgentInput, slug: string | undefined): Promise<Observable<AGUIEvent>> {
  const convId = parseOr400(convIdSchema, input.threadId, 'threadId');
  const forwarded = parseOr400(forwardedSchema, input.forwardedProps ?? undefined, 'forwardedProps');
  const started: AGUIEvent = { type: agUi().EventType.RUN_STARTED, threadId: convId, runId: input.runId };
  const schemaOf = (name: string): Record<string, unknown> => parametersOf(context, name);
  const mapping = { threadId: convId, runId: input.runId, interruptsOf: (pause: PauseInfo) => interruptsOf(pause, schemaOf) };
  if (input.resume !== undefined && input.resume.length > 0) {
    await openOwned(context, caller, convId);
    const resumed$ = defer(() => resumeRun(context, caller, convId, input)).pipe(
      mergeMap((segment$) => segment$.pipe(toAgUiEvents(mapping))),
      catchError((error: unknown) => {
        if (error instanceof InvalidResume) return of(runError(error.code, error.message));
        return of(error instanceof ViewRefusal ? runError(refusalCode(error), error.message) : failed());
      }),
    );
    return concat(of(started), resumed$);
  }
  const prompt = lastUserText(input);
  const stepMode = forwarded?.stepwise?.step_mode;
  const body = { prompt, conv_id: convId, ...(stepMode === undefined ? {} : { overrides: { step_mode: stepMode } }) };
  const run = await startRun(context, caller, body, slug);
  return concat(of(started), startedRun$(context.stepwise.frames, convId, run.since_seq, run.handle.inference_id).pipe(toAgUiEvents(mapping)));
}

/**
 * The run's segment after the decision a resume is (docs/ag-ui.md, Resuming). A pause resolved
 * before (by another view, a dashboard, `/debug/continue` or its deadline) is `pause_resolved`; a
 * resume that is no decision of a pending pause is `invalid_resume`; either changes nothing.
 */
async function resumeRun(context: ServerContext, caller: Caller, convId: string, input: RunAgentInput): Promise<Observable<StepwiseEvent>> {
  const resume = input.resume ?? [];
  const pause = await pendingPause(context, convId, pauseIdOf(resume) ?? '');
  return decide(context, caller, pause, decisionOf(pause, resume, (name) => parametersOf(context, name)));
}

/** A refusal as AG-UI's `RUN_ERROR` codes name it: a refused argument is a resume that fails its schema. */
function refusalCode({ code }: ViewRefusal): string {
  if (code === 'invalid_arguments' || code === 'invalid_action') return 'invalid_resume';
  return code === 'unknown_pause' ? 'pause_resolved' : code;
}

/** The prompt: the text of the last user message (the conversation's history stays on the server). */
function lastUserText(input: RunAgentInput): string {
  const last = [...input.messages].reverse().find((message) => message.role === 'user');
  const text = last && 'content' in last ? agUi().contentToText(last.content as Parameters<typeof contentToText>[0]).trim() : '';
  if (text === '') throw invalidRequest([{ field: 'messages', message: 'a run needs a user message with text (or resume entries)' }]);
  return text;
}

const runError = (code: string, message: string): AGUIEvent => ({ type: agUi().EventType.RUN_ERROR, code, message });

/** An unexpected failure once the stream began: the client gets a `RUN_ERROR`, never a cut stream. */
const failed = (): AGUIEvent => runError('internal', 'internal server error');
