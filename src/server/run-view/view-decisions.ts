import type { Observable } from 'rxjs';
import type { PauseInfo } from '../../core/pauses.js';
import type { StepwiseEvent } from '../../streams/events.js';
import type { Caller } from '../auth.js';
import { statusOf } from '../commands.js';
import { ownedConversation, type ServerContext } from '../context.js';
import { resumedRun$ } from './run-segment.js';

/** Where a pause named by a view stands: still waiting, resolved (by anyone, or by its deadline), or never known. */
export type PauseState =
  | { readonly state: 'pending'; readonly pause: PauseInfo }
  | { readonly state: 'resolved'; readonly reason?: string }
  | { readonly state: 'unknown' };

/**
 * The conversation as the caller may use it from a view: made known here first (a run another
 * instance owns, docs/protocol.md, Several instances), then 404 when no instance knows it and 403
 * when it is another user's, thrown as `HttpError`s before any stream starts.
 */
export async function openOwned(context: ServerContext, caller: Caller, convId: string): Promise<void> {
  await context.directory.open(convId);
  await ownedConversation(context, caller, convId);
}

/** The state of `pauseId` in `convId`, from the whole service's pending pauses and decisions. */
export async function pauseState(context: ServerContext, convId: string, pauseId: string): Promise<PauseState> {
  const pending = (await context.directory.pauses(convId)).find(({ pause }) => pause.pause_id === pauseId);
  if (pending) return { state: 'pending', pause: pending.pause };
  const decided = (await context.stepwise.store.decisions(convId)).find((decision) => decision.pause_id === pauseId);
  if (decided) return { state: 'resolved', reason: decided.reason };
  // Resolved so recently (or on a memory store) that only the controller that resolved it knows it.
  return (await context.commands.convOfPause(pauseId)) === convId ? { state: 'resolved' } : { state: 'unknown' };
}

/** Why a view's answer is no decision: a status and code as `/debug/continue` would answer, and nothing changed. */
export class ViewRefusal extends Error {
  override readonly name = 'ViewRefusal';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retry_after_s?: number,
  ) {
    super(message);
  }
}

/**
 * The pending pause a view's answer names, or a `ViewRefusal`: 400 `invalid_resume` for a pause the
 * conversation never had, 409 `pause_resolved` for one resolved already or past its deadline (its
 * timeout action decides it any moment).
 */
export async function pendingPause(context: ServerContext, convId: string, pauseId: string): Promise<PauseInfo> {
  const found = await pauseState(context, convId, pauseId);
  if (found.state === 'unknown') throw new ViewRefusal(400, 'invalid_resume', `no pause "${pauseId}" in conversation ${convId}`);
  if (found.state === 'resolved' || found.pause.deadline_ms <= Date.now()) {
    const how = found.state === 'resolved' ? (found.reason ?? 'resolved') : 'expired';
    throw new ViewRefusal(409, 'pause_resolved', `pause ${pauseId} was already resolved (${how}); nothing was changed`);
  }
  return found.pause;
}

/** A decision a view took (docs/protocol.md, Decisions). */
export interface ViewDecision {
  readonly action: 'continue' | 'deny' | 'edit' | 'answer';
  readonly tool_call_ids?: readonly string[];
  readonly reason?: string;
  readonly edits?: Readonly<Record<string, unknown>>;
  readonly results?: Readonly<Record<string, unknown>>;
  readonly answers?: Readonly<Record<string, unknown>>;
}

/**
 * Takes a view's decision at a pause through the command port, as every frontend does, so it
 * reaches the instance that runs it and the first decision of any view wins. Resolves,
 * once the decision is committed, with the run's segment from that decision to its next pause or its
 * end; rejects with that instance's refusal as a `ViewRefusal`, and then nothing changed.
 */
export async function decide(context: ServerContext, caller: Caller, pause: PauseInfo, decision: ViewDecision): Promise<Observable<StepwiseEvent>> {
  const convId = pause.conv_id;
  // Taken before the decision: the resumed frames come after it, read from the log if they are already there.
  const sinceSeq = context.stepwise.frames.lastSeq(convId);
  const result = await context.commands.send({
    command: { type: 'decide', ...decision, pause_id: pause.pause_id, conv_id: convId },
    conv_id: convId,
    ...(caller.user ? { user: caller.user } : {}),
  });
  if (result.ok) return resumedRun$(context.stepwise.frames, convId, sinceSeq, pause.pause_id);
  const { error } = result;
  throw new ViewRefusal(statusOf(error), error.code, error.message, error.retry_after_s);
}

/** The JSON Schema of a tool's parameters, as advertised to models; an open object for a tool not known here. */
export function parametersOf(context: ServerContext, name: string): Record<string, unknown> {
  return (context.stepwise.registry.get(name)?.parameters as Record<string, unknown> | undefined) ?? { type: 'object' };
}
