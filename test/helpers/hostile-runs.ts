import { get } from './server-harness.js';
import type { Frame } from './server-ws-client.js';
import { GOOD_BOOKING } from './hostile-files.js';
import { MAX_DEPTH, ODD_TEXTS, TOOL_NAMES } from './hostile-model.js';
import type { Rng } from './seeded-rng.js';
import { brief, checked, FuzzClient, type FuzzReport } from './hostile-driver.js';

/**
 * Drives the conversations of a hostile-model fuzz: runs started with random overrides, every `debugger.pause`
 * answered with a random resolution (continue, deny, edit, answer, the deadline, cancel, step mode off, the same
 * continue twice at once, and decisions the server must refuse with their documented status and code), each run
 * waited for up to its bound. What the server acknowledged is kept for hostile-checks.ts.
 */

/** What a run may take, from its `/chat` to its `run.end`, before it counts as wedged. */
export const RUN_BOUND_MS = 45_000;
/** What a pause may take past its deadline before it counts as never resolved. */
const PAUSE_SLACK_MS = 8_000;

/** Where one conversation's requests go: with one server all are the same; with a service, any instance. */
export interface ConvPlan {
  readonly convId: string;
  /** Where `/chat` goes (the run's owner). */
  readonly chatBase: string;
  /** Where its socket joins. */
  readonly wsBase: string;
  /** Where decisions, cancels and step mode go: one picked per request. */
  readonly decideBases: readonly string[];
  readonly runs: number;
  readonly rng: Rng;
}

/** A run as the fuzzer saw it. */
export interface RunRecord {
  readonly inferenceId: string;
  readonly turnId: string;
  /** The tools the run may call (undefined: all). */
  readonly allowed?: readonly string[];
  status?: string;
  error?: string;
}

/** A decision the server acknowledged with 200: what the run must then show. */
export interface Ack {
  readonly pauseId: string;
  readonly inferenceId: string;
  readonly reason: 'continued' | 'denied' | 'edited' | 'answered';
  readonly denied?: readonly string[];
  readonly edits?: Readonly<Record<string, unknown>>;
  readonly answers?: Readonly<Record<string, unknown>>;
}

export interface ConvResult {
  readonly plan: ConvPlan;
  readonly ws: FuzzClient;
  readonly runs: RunRecord[];
  readonly acks: Ack[];
  /** Runs whose `/chat/cancel` said `cancelled: true`. */
  readonly cancelled: Set<string>;
}

const isPauseOf = (frame: Frame, inferenceId: string): boolean => frame.type === 'debugger.pause' && frame['metadata']?.inference_id === inferenceId;
export const isEndOf = (frame: Frame, inferenceId: string): boolean => frame.type === 'run.end' && frame['inference_id'] === inferenceId;

/** Runs `plan.runs` runs of one conversation (fewer once its script is exhausted), each driven to its end. */
export async function fuzzConversation(report: FuzzReport, plan: ConvPlan): Promise<ConvResult> {
  const { rng, convId } = plan;
  const ws = await FuzzClient.connect(report, plan.wsBase, convId);
  const result: ConvResult = { plan, ws, runs: [], acks: [], cancelled: new Set() };
  if (rng.chance(0.4)) await checked(report, `${convId} step enable`, rng.pick(plan.decideBases), 'POST', '/debug/step/enable', { conv_id: convId }, [200]);
  for (let i = 0; i < plan.runs; i += 1) {
    const run = await startRun(report, plan, {});
    if (!run) continue;
    result.runs.push(run);
    // A wedged run is reported once: the conversation is not driven further, so the test ends within its timeout.
    if (!(await driveRun(report, plan, ws, run, result, 0))) break;
    if (run.error?.includes('exhausted')) break;
  }
  return result;
}

/** `POST /chat` with random overrides; retried while the service still says the last run is in progress. */
export async function startRun(report: FuzzReport, plan: ConvPlan, forced: { stepMode?: boolean; maxIterations?: number }): Promise<RunRecord | undefined> {
  const { rng, convId } = plan;
  const allowed = rng.chance(0.15) ? rng.subset(TOOL_NAMES, 0.6) : undefined;
  const overrides = {
    ...(forced.stepMode ?? rng.chance(0.45) ? { step_mode: true } : {}),
    ...(forced.maxIterations !== undefined ? { max_iterations: forced.maxIterations } : rng.chance(0.7) ? { max_iterations: rng.int(1, 8) } : {}),
    ...(allowed && allowed.length > 0 ? { tools: allowed } : {}),
    ...(rng.chance(0.2) ? { system_prompt: rng.pick(ODD_TEXTS) } : {}),
  };
  const body = { prompt: rng.pick(ODD_TEXTS), conv_id: convId, overrides };
  const end = Date.now() + 10_000;
  for (;;) {
    const reply = await checked(report, `${convId} /chat`, plan.chatBase, 'POST', '/chat', body, [200, 409]);
    if (!reply) return undefined;
    if (reply.status === 200) {
      report.count('runs');
      return { inferenceId: reply.body.inference_id, turnId: reply.body.turn_id, ...(overrides.tools ? { allowed: overrides.tools } : {}) };
    }
    if (Date.now() > end) {
      report.fail(`${convId} /chat`, `still ${reply.status} ${brief(reply.body)} 10 s after the conversation's last run ended`);
      return undefined;
    }
    await new Promise((done) => setTimeout(done, 100));
  }
}

/**
 * Answers the run's pauses until its `run.end`; a run that does not end within `RUN_BOUND_MS` is a wedged run
 * (reported, then cancelled): false. `from`: the index of the socket's frames to look from.
 */
export async function driveRun(report: FuzzReport, plan: ConvPlan, ws: FuzzClient, run: RunRecord, result: ConvResult, from: number): Promise<boolean> {
  const started = Date.now();
  let cursor = from;
  for (;;) {
    const left = RUN_BOUND_MS - (Date.now() - started);
    let frame: Frame;
    try {
      frame = await ws.waitFor((f) => isPauseOf(f, run.inferenceId) || isEndOf(f, run.inferenceId), cursor, Math.max(left, 1));
    } catch {
      const pending = await get(plan.decideBases[0] as string, `/debug/pauses?conv_id=${plan.convId}`).catch((error: Error) => ({ body: error.message }));
      report.fail(`${plan.convId} run ${run.inferenceId}`, `no run.end within ${RUN_BOUND_MS} ms (wedged); last frames ${brief(ws.frames.slice(-6).map((f) => `${f.seq}:${f.type}:${brief(f.id, 40)}`))}; pending pauses ${brief(pending.body, 600)}`);
      await checked(report, `${plan.convId} cancel wedged`, plan.chatBase, 'POST', '/chat/cancel', { conv_id: plan.convId }, [200]);
      await ws.waitFor((f) => isEndOf(f, run.inferenceId), cursor, 5000).catch(() => report.fail(`${plan.convId} run ${run.inferenceId}`, 'no run.end 5 s after its cancel'));
      return false;
    }
    cursor = ws.frames.indexOf(frame, cursor) + 1;
    if (frame.type === 'run.end') {
      run.status = frame['status'];
      if (frame['error'] !== undefined) run.error = String(frame['error']);
      report.count(`run_${frame['status']}`);
      if (!['completed', 'failed', 'cancelled', 'max_iterations'].includes(frame['status'])) report.fail(`${plan.convId} run ${run.inferenceId}`, `run.end with status ${brief(frame['status'])}`);
      return true;
    }
    await resolvePause(report, plan, ws, run, frame, result);
  }
}

/** A decision's body and what it must be answered with. */
interface Choice {
  readonly kind: string;
  readonly body?: unknown;
  /** Statuses that are right for it (503 with Retry-After always is). */
  readonly allowed: readonly number[];
  /** The error code a refusal must carry, when only one is right. */
  readonly code?: string;
  /** What a 200 acknowledges. */
  readonly ack?: Omit<Ack, 'pauseId' | 'inferenceId'>;
}

/** A value nested `levels` deep, as JSON text. */
const nestedText = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
/** Bounded: a pause of 3 000 calls must not make a body past `tool_call_ids`' 1 000 or the body's 1 MiB. */
const some = <T>(rng: Rng, items: readonly T[]): T[] => rng.shuffle(items).slice(0, rng.int(1, Math.min(items.length, 20)));

const ACCEPTED = [200, 404, 409] as const;
const REFUSED = [400, 409, 404] as const;

/** One of every resolution an operator has at an `after_inference` pause, and some the server must refuse. */
function afterInferenceChoice(rng: Rng, pause: Frame, run: RunRecord): Choice {
  const id = pause.pause_id as string;
  const calls = (pause['extra']?.tool_calls ?? []) as { id: string; name: string; answer_schema?: unknown }[];
  const questions = calls.filter((call) => call.answer_schema !== undefined);
  const allowed = (name: string): boolean => !run.allowed || run.allowed.includes(name);
  const editable = calls.filter((call) => ['echo', 'gate', 'mirror'].includes(call.name) && allowed(call.name));
  const firstId = calls[0]?.id ?? 'none';
  const kinds: [number, () => Choice][] = [
    [14, () => ({ kind: 'continue', body: { pause_id: id }, allowed: ACCEPTED, ack: { reason: 'continued' } })],
    [3, () => ({ kind: 'continue_conv', body: { pause_id: id, conv_id: pause['metadata'].conversation_id, action: 'continue' }, allowed: ACCEPTED, ack: { reason: 'continued' } })],
    [2, () => ({ kind: 'wrong_conv', body: { pause_id: id, conv_id: 'someone-else' }, allowed: [403], code: 'forbidden' })],
    [7, () => ({ kind: 'deny_all', body: { pause_id: id, action: 'deny', reason: rng.pick(ODD_TEXTS.slice(0, 9)) }, allowed: ACCEPTED, ack: { reason: 'denied', denied: calls.map((call) => call.id) } })],
    [
      7,
      () => {
        const chosen = some(rng, calls.map((call) => call.id));
        return { kind: 'deny_some', body: { pause_id: id, action: 'deny', tool_call_ids: chosen }, allowed: ACCEPTED, ack: { reason: 'denied', denied: chosen } };
      },
    ],
    [2, () => ({ kind: 'deny_unknown', body: { pause_id: id, action: 'deny', tool_call_ids: [firstId, 'no-such-call'] }, allowed: REFUSED })],
    [1, () => ({ kind: 'huge_reason', body: { pause_id: id, action: 'deny', reason: 'r'.repeat(10_001) }, allowed: [400] })],
    [1, () => ({ kind: 'oversized_body', body: { pause_id: id, action: 'deny', reason: 'r'.repeat(1024 * 1024 + 10) }, allowed: [413] })],
    [
      editable.length > 0 ? 8 : 0,
      () => {
        const edits = Object.fromEntries(some(rng, editable).map((call) => [call.id, call.name === 'mirror' ? { edited: rng.pick(ODD_TEXTS), deep: JSON.parse(nestedText(100)) } : { text: `edited ${rng.pick(ODD_TEXTS)}` }]));
        return { kind: 'edit', body: { pause_id: id, action: 'edit', edits }, allowed: ACCEPTED, ack: { reason: 'edited', edits } };
      },
    ],
    [editable.length > 0 ? 3 : 0, () => ({ kind: 'edit_invalid', body: { pause_id: id, action: 'edit', edits: { [(editable.find((c) => c.name !== 'mirror') ?? editable[0])?.id as string]: editable.some((c) => c.name !== 'mirror') ? { text: 5 } : 'not an object' } }, allowed: REFUSED })],
    [1, () => ({ kind: 'edit_unknown', body: { pause_id: id, action: 'edit', edits: { 'no-such-call': {} } }, allowed: REFUSED })],
    // Past the bound of 128: the value sits inside the body, "edits" and `levels` objects.
    [4, () => ({ kind: 'edit_too_deep', body: `{"pause_id":${JSON.stringify(id)},"action":"edit","edits":{${JSON.stringify(firstId)}:${nestedText(rng.pick([MAX_DEPTH - 1, 200, 5000, 60_000]))}}}`, allowed: [400], code: 'too_deep' })],
    [
      editable.length > 0 ? 2 : 0,
      () => {
        const call = editable[0] as { id: string; name: string };
        // Inside 128 containers: within the bound, so only the tool's schema decides.
        return { kind: 'edit_at_bound', body: `{"pause_id":${JSON.stringify(id)},"action":"edit","edits":{${JSON.stringify(call.id)}:${nestedText(MAX_DEPTH - 2)}}}`, allowed: [200, 400, 404, 409] };
      },
    ],
    [2, () => ({ kind: 'edit_proto', body: `{"pause_id":${JSON.stringify(id)},"action":"edit","edits":{"__proto__":{"text":"p"},"constructor":{"text":"c"}}}`, allowed: REFUSED })],
    [
      editable.length > 0 ? 2 : 0,
      () => ({ kind: 'edit_proto_args', body: `{"pause_id":${JSON.stringify(id)},"action":"edit","edits":{${JSON.stringify((editable[0] as { id: string }).id)}:{"__proto__":{"text":7},"text":"own"}}}`, allowed: [200, 400, 404, 409] }),
    ],
    [
      questions.length > 0 ? 22 : 0,
      () => {
        const answers = Object.fromEntries(questions.map((call) => [call.id, { ...GOOD_BOOKING, city: rng.pick(['Lyon', 'Zürich \ud800', '東京']) }]));
        return { kind: 'answer', body: { pause_id: id, action: 'answer', answers }, allowed: ACCEPTED, ack: { reason: 'answered', answers } };
      },
    ],
    [questions.length > 0 ? 4 : 1, () => ({ kind: 'answer_invalid', body: { pause_id: id, action: 'answer', answers: Object.fromEntries((questions.length > 0 ? questions : calls).map((call) => [call.id, { city: '', nights: -1 }])) }, allowed: REFUSED })],
    [2, () => ({ kind: 'answer_too_deep', body: `{"pause_id":${JSON.stringify(id)},"action":"answer","answers":{${JSON.stringify(questions[0]?.id ?? firstId)}:${nestedText(300)}}}`, allowed: [400], code: 'too_deep' })],
    [1, () => ({ kind: 'unknown_action', body: { pause_id: id, action: 'explode' }, allowed: [400], code: 'invalid_action' })],
    [1, () => ({ kind: 'unknown_pause', body: { pause_id: `${id}-nope` }, allowed: [404], code: 'unknown_pause' })],
    ...COMMON,
  ];
  return rng.weighted(kinds)();
}

/** What is left at an `after_tools` pause: continue, a result edit, and decisions the server must refuse. */
function afterToolsChoice(rng: Rng, pause: Frame, ws: FuzzClient): Choice {
  const id = pause.pause_id as string;
  const index = ws.frames.indexOf(pause);
  const results = ws.frames.slice(Math.max(0, index - 400), index).filter((frame) => frame.type === 'tool.result').map((frame) => frame.id);
  const target = results.length > 0 ? (rng.pick(results) as string) : 'none';
  const kinds: [number, () => Choice][] = [
    [20, () => ({ kind: 'continue', body: { pause_id: id }, allowed: ACCEPTED, ack: { reason: 'continued' } })],
    [4, () => ({ kind: 'result_edit', body: { pause_id: id, action: 'edit', results: { [target]: rng.pick<unknown>([{ edited: '\ud800' }, 1e308, null, JSON.parse(nestedText(120)), ODD_TEXTS]) } }, allowed: [200, 400, 404, 409] })],
    [2, () => ({ kind: 'result_too_deep', body: `{"pause_id":${JSON.stringify(id)},"action":"edit","results":{${JSON.stringify(target)}:${nestedText(4000)}}}`, allowed: [400], code: 'too_deep' })],
    [2, () => ({ kind: 'deny_after_tools', body: { pause_id: id, action: 'deny' }, allowed: REFUSED })],
    ...COMMON,
  ];
  return rng.weighted(kinds)();
}

/** Resolutions every pause has: its deadline, a cancel, step mode off, and the same continue twice at once. */
const COMMON: [number, () => Choice][] = [
  [8, () => ({ kind: 'deadline', allowed: [] })],
  [3, () => ({ kind: 'cancel', allowed: [200] })],
  [4, () => ({ kind: 'disable', allowed: [200] })],
  [3, () => ({ kind: 'double', allowed: ACCEPTED })],
];

/**
 * One pause: up to three decisions (one refused leaves it pending), then its `debugger.resume` (or the run's end)
 * within its deadline and a slack. A decision answered 200 is an acknowledgement the run must honour.
 */
async function resolvePause(report: FuzzReport, plan: ConvPlan, ws: FuzzClient, run: RunRecord, pause: Frame, result: ConvResult): Promise<void> {
  const { rng, convId } = plan;
  const where = `${convId} run ${run.inferenceId} pause ${pause.pause_id} (${pause['phase']}, ${(pause['extra']?.tool_calls ?? []).length} calls)`;
  report.count(`pause_${pause['phase']}`);
  if (rng.chance(0.15)) await sideReads(report, plan);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const choice = pause['phase'] === 'after_inference' ? afterInferenceChoice(rng, pause, run) : afterToolsChoice(rng, pause, ws);
    report.count(`decide_${choice.kind}`);
    const base = rng.pick(plan.decideBases);
    if (choice.kind === 'deadline') break;
    if (choice.kind === 'cancel') {
      const reply = await checked(report, `${where} cancel`, base, 'POST', '/chat/cancel', { conv_id: convId }, [200]);
      if (reply?.status === 200 && reply.body.cancelled === true) result.cancelled.add(run.inferenceId);
      break;
    }
    if (choice.kind === 'disable') {
      await checked(report, `${where} disable`, base, 'POST', '/debug/step/disable', { conv_id: convId }, [200]);
      // Step mode back on for a later run, some of the time.
      if (rng.chance(0.3)) await checked(report, `${where} enable`, base, 'POST', '/debug/step/enable', { conv_id: convId }, [200]);
      break;
    }
    if (choice.kind === 'double') {
      const replies = await Promise.all([0, 1].map(() => checked(report, `${where} double continue`, rng.pick(plan.decideBases), 'POST', '/debug/continue', { pause_id: pause.pause_id }, ACCEPTED)));
      const oks = replies.filter((reply) => reply?.status === 200).length;
      if (oks > 1) report.fail(where, 'the same continue sent twice at once was acknowledged twice (a pause resolves once)');
      if (oks === 1) result.acks.push({ pauseId: pause.pause_id, inferenceId: run.inferenceId, reason: 'continued' });
      break;
    }
    const reply = await checked(report, `${where} ${choice.kind}`, base, 'POST', '/debug/continue', choice.body, choice.allowed);
    if (!reply) break;
    if (choice.code !== undefined && reply.status !== 503 && reply.body?.error?.code !== choice.code) {
      report.fail(`${where} ${choice.kind}`, `expected error ${choice.code}, got ${reply.status} ${brief(reply.body)}`);
    }
    if (reply.status === 409 && reply.body?.error?.code !== 'pause_resolved') report.fail(`${where} ${choice.kind}`, `409 that is not pause_resolved: ${brief(reply.body)}`);
    if (reply.status === 200) {
      if (choice.ack) result.acks.push({ pauseId: pause.pause_id, inferenceId: run.inferenceId, ...choice.ack });
      break;
    }
    if (reply.status === 409) break;
  }
  const waitMs = Math.max(0, Number(pause['deadline_ms']) - Date.now()) + PAUSE_SLACK_MS;
  await ws
    .waitFor((f) => (f.type === 'debugger.resume' && f['pause_id'] === pause.pause_id) || isEndOf(f, run.inferenceId), ws.frames.indexOf(pause), waitMs)
    .catch(() => report.fail(where, `not resolved ${PAUSE_SLACK_MS} ms after its deadline ${new Date(pause['deadline_ms']).toISOString()}`));
}

/** Reads of hostile data in the middle of a run: each must answer 200. */
async function sideReads(report: FuzzReport, plan: ConvPlan): Promise<void> {
  const base = plan.rng.pick(plan.decideBases);
  const conv = plan.convId;
  for (const path of [`/conversations/${conv}`, `/hydrate?conv_id=${conv}&since_seq=0&limit=200`, `/debug/pauses?conv_id=${conv}`, '/pauses', `/conversations/${conv}/decisions`, '/conversations']) {
    await checked(report, `${conv} read`, base, 'GET', path, undefined, [200]);
  }
}
