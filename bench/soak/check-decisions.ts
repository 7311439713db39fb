import { isDeepStrictEqual } from 'node:util';
import type { AuditRow, Collected, Frame } from './collect.js';
import { DENIED, INTERRUPTED } from './fixtures.js';
import { clock } from './http.js';
import { hadAmbiguousAttempt, type Decision } from './operators.js';
import type { Violation } from './types.js';

/** The resume reason and audit reason each action must leave (docs/protocol.md, "Frames"). */
const REASON = { continue: 'continued', deny: 'denied', edit: 'edited' } as const;

export interface DecisionFindings {
  readonly violations: Violation[];
  readonly racesLost: number;
  readonly ambiguous: number;
}

export interface DecisionCheckInput {
  readonly decisions: readonly Decision[];
  readonly collected: ReadonlyMap<string, Collected>;
  /** Pause id -> the instances that still list it as pending at the end. */
  readonly pendingAtEnd: ReadonlyMap<string, readonly number[]>;
  /** Whether a fault ran (a kill, a Redis outage): only then may a call be `interrupted`. */
  readonly faults: boolean;
}

/**
 * Every acknowledged decision must have happened as decided: the pause resolved once with the
 * decision's reason, the audit trail has it, and each tool call ran with the decided arguments or
 * was denied. A 409 `pause_resolved` is fine when another operator had the 200; anything else an
 * operator was answered (after retries) is an unexpected reply.
 */
export function checkDecisions(input: DecisionCheckInput): DecisionFindings {
  const violations: Violation[] = [];
  const byPause = groupBy(input.decisions, (decision) => decision.pause.pause_id);
  let racesLost = 0;
  let ambiguous = 0;
  for (const [pauseId, decisions] of byPause) {
    const acks = decisions.filter((decision) => decision.result === 'acknowledged');
    const convId = decisions[0]?.pause.conv_id as string;
    if (acks.length > 1) {
      violations.push({ kind: 'acknowledged_twice', conv_id: convId, pause_id: pauseId, detail: `${acks.length} operators got 200: ${acks.map(describeAttempt).join('; ')}` });
    }
    for (const ack of acks) {
      const problems = whatWentWrong(ack, input);
      if (problems.length > 0) violations.push({ kind: 'decision_lost', conv_id: convId, pause_id: pauseId, detail: `${describeAttempt(ack)}: ${problems.join('; ')}` });
    }
    for (const decision of decisions.filter((d) => d.result === 'refused')) {
      if (acks.length > 0) racesLost += 1;
      // Any operator's attempt whose answer was lost may be the decision this 409 reports (a pause
      // handed to two workers at once: one's request reached an owner killed before it answered).
      else if (decisions.some(hadAmbiguousAttempt)) ambiguous += 1;
      else violations.push({ kind: 'unexpected_reply', conv_id: convId, pause_id: pauseId, detail: `409 pause_resolved (${JSON.stringify(lastBody(decision)?.error?.details ?? {})}) though no operator had a 200 for it: ${describeAttempt(decision)}` });
    }
    // One line per pause, however often it was handed out again after an unexpected answer.
    if (decisions.some((d) => d.result === 'unexpected')) {
      violations.push({ kind: 'unexpected_reply', conv_id: convId, pause_id: pauseId, detail: decisions.map((d) => `${d.result}: ${describeAttempt(d)}`).join('; ') });
    }
  }
  return { violations, racesLost, ambiguous };
}

function whatWentWrong(ack: Decision, input: DecisionCheckInput): string[] {
  const { pause, body } = ack;
  const problems: string[] = [];
  const listedBy = input.pendingAtEnd.get(pause.pause_id);
  if (listedBy) problems.push(`still pending at the end (listed by instance ${listedBy.join(', ')})`);
  const collected = input.collected.get(pause.conv_id);
  problems.push(...auditProblems(ack, collected?.audit));
  const frames = collected?.frames;
  if (!frames) return [...problems, 'its log could not be read'];
  const resumes = frames.filter((frame) => frame.type === 'debugger.resume' && frame.id === pause.pause_id);
  if (resumes.length === 0) problems.push('no debugger.resume in the log');
  else if (resumes[0]?.reason !== REASON[body.action]) problems.push(`debugger.resume says ${resumes[0]?.reason} by ${resumes[0]?.by}`);
  const again = pausedAgain(frames, pause.pause_id);
  if (again) problems.push(`its run paused at the same point again, as ${again} (a takeover that did not go on from the decision)`);
  if (pause.phase === 'after_inference') problems.push(...toolProblems(ack, frames, input.faults));
  return problems;
}

/**
 * The id of a later pause of the same run at the same point (phase, summary, tool calls) as a decided
 * one: the run came back to a pause it had gone past. Undefined when there is none.
 */
function pausedAgain(frames: readonly Frame[], pauseId: string): string | undefined {
  const pointOf = (frame: Frame): string =>
    JSON.stringify([frame.metadata?.inference_id, frame.phase, frame.summary, (frame.extra?.tool_calls ?? []).map((call: { id?: string }) => call.id)]);
  const pauses = frames.filter((frame) => frame.type === 'debugger.pause');
  const decided = pauses.find((frame) => frame.id === pauseId);
  if (!decided) return undefined;
  const point = pointOf(decided);
  return pauses.find((frame) => frame.seq > decided.seq && frame.id !== pauseId && pointOf(frame) === point)?.id;
}

function auditProblems(ack: Decision, audit: readonly AuditRow[] | undefined): string[] {
  if (!audit) return ['its audit trail could not be read'];
  const rows = audit.filter((row) => row.pause_id === ack.pause.pause_id);
  if (rows.length === 0) return ['missing from GET /conversations/:id/decisions'];
  const problems = rows.length > 1 ? [`${rows.length} rows in the audit trail`] : [];
  const row = rows[0] as AuditRow;
  if (row.reason !== REASON[ack.body.action] || row.by !== 'local') problems.push(`the audit trail says ${row.reason} by ${row.by}`);
  for (const [callId, args] of Object.entries(ack.body.edits ?? {})) {
    if (!isDeepStrictEqual(row.edits?.[callId]?.after, args)) problems.push(`the audit trail's edit of ${callId} is ${JSON.stringify(row.edits?.[callId]?.after)}`);
  }
  return problems;
}

/** Each call of the pause: denied, or run once with the arguments decided (or interrupted by a fault). */
function toolProblems(ack: Decision, frames: readonly Frame[], faults: boolean): string[] {
  const { body } = ack;
  const problems: string[] = [];
  for (const call of ack.pause.tool_calls ?? []) {
    const results = frames.filter((frame) => frame.type === 'tool.result' && frame.id === call.id);
    if (results.length === 0) {
      problems.push(`no tool.result for ${call.id}`);
      continue;
    }
    if (results.length > 1) problems.push(`${results.length} tool.result frames for ${call.id}`);
    const result = results[0] as Frame;
    const error = typeof result.error === 'string' ? result.error : undefined;
    const denied = body.action === 'deny' && (body.tool_call_ids === undefined || body.tool_call_ids.includes(call.id));
    if (denied) {
      if (!error?.startsWith(DENIED)) problems.push(`${call.id} was denied but its tool.result is ${short(result.result ?? error)}`);
      continue;
    }
    const expected = body.action === 'edit' ? body.edits?.[call.id] : call.input;
    if (error?.startsWith(INTERRUPTED) && faults) continue;
    if (error !== undefined) problems.push(`${call.id} failed: ${short(error)}`);
    else if (!isDeepStrictEqual(result.result?.args, expected)) problems.push(`${call.id} ran with ${short(result.result?.args)}, decided ${short(expected)}`);
  }
  return problems;
}

/**
 * One line for an operator's attempt: action, each exchange (instance, time sent, answer), and the
 * owner as the harness knew it, e.g. `continue (after_tools; owner 0): instance 2 at 17:52:53.950 -> 503 owner_unavailable, instance 1 at 17:52:54.010 -> 200`.
 */
export function describeAttempt(decision: Decision): string {
  const { body, attempts } = decision;
  const what = body.action === 'deny' && body.tool_call_ids ? `deny ${body.tool_call_ids.join(',')}` : body.action;
  const owner = decision.ownerAtSend ?? 'unknown';
  const exchanges = attempts.map((a) => `instance ${a.instance} at ${clock(a.at)} -> ${a.status !== undefined ? `${a.status}${a.body?.error ? ` ${a.body.error.code}` : ''}` : `no answer (${a.failure})`}`);
  return `${what} (${decision.pause.phase}; owner ${owner}): ${exchanges.join(', ')}`;
}

const lastBody = (decision: Decision): any => decision.attempts.at(-1)?.body;

export function short(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

export function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
