import { isDeepStrictEqual } from 'node:util';
import type { Frame } from './server-ws-client.js';
import { MAX_DEPTH, TOO_DEEP, TOO_LARGE, type Refusal } from './hostile-model.js';
import { brief, checked, type FuzzReport } from './hostile-driver.js';
import { isEndOf, type ConvResult } from './hostile-runs.js';

/**
 * What a hostile-model fuzz checks in the frames a conversation's socket got and the store keeps: seq gapless and
 * the same live and stored; each pause resolved once and before its run's end; nothing of a run after its end; each
 * inference against the response it played (refusals where arguments enter, call ids, names, texts, errors); and
 * every decision the server acknowledged honoured and in its audit trail.
 */

/** Every frame of a conversation from `/hydrate`, paged, as the store has them. */
export async function hydrateAll(report: FuzzReport, base: string, convId: string): Promise<Frame[] | undefined> {
  const frames: Frame[] = [];
  let since = 0;
  for (let page = 0; page < 10_000; page += 1) {
    const reply = await checked(report, `${convId} hydrate`, base, 'GET', `/hydrate?conv_id=${convId}&since_seq=${since}&limit=1000`, undefined, [200]);
    if (reply?.status !== 200) return undefined;
    // Each as the socket sent it: `{"sem": true, "event": {…}}`.
    const got = (reply.body.frames as { event: Frame }[]).map((frame) => frame.event);
    frames.push(...got);
    if (got.length === 0 || since >= reply.body.last_seq) return frames;
    since = got[got.length - 1]?.seq as number;
    if (since >= reply.body.last_seq) return frames;
  }
  return frames;
}

/** Seqs 1, 2, 3, … with no gap and no duplicate. */
export function checkGapless(report: FuzzReport, where: string, frames: readonly Frame[]): void {
  for (let i = 0; i < frames.length; i += 1) {
    if (frames[i]?.seq !== i + 1) {
      report.fail(where, `seq ${frames[i]?.seq} at position ${i + 1} (a gap or a duplicate); around it: ${brief(frames.slice(Math.max(0, i - 2), i + 2).map((f) => `${f.seq}:${f.type}`))}`);
      return;
    }
  }
}

/** The same frames, seq by seq, as a reader who joined later gets them: type and id, then the whole frame. */
export function checkSameFrames(report: FuzzReport, where: string, live: readonly Frame[], stored: readonly Frame[]): void {
  const bySeq = new Map(stored.map((frame) => [frame.seq, frame]));
  let different = 0;
  for (const frame of live) {
    const other = bySeq.get(frame.seq);
    if (!other || other.type !== frame.type || other.id !== frame.id) {
      report.fail(where, `live seq ${frame.seq} ${frame.type} ${brief(frame.id, 60)} is ${other ? `${other.type} ${brief(other.id, 60)}` : 'missing'} in the store`);
      return;
    }
    if (!isDeepStrictEqual(frame, other) && different++ === 0) {
      report.fail(where, `live seq ${frame.seq} ${frame.type} differs from its stored copy: live ${brief(frame, 400)} stored ${brief(other, 400)}`);
    }
  }
}

/**
 * A conversation's frames against its script and its decisions: gapless seq; each pause resolved once and before
 * its run's end; nothing of a run after its `run.end`; per inference, the response it played (text, error, calls by
 * name), refused arguments answered at once with their error and never paused or run, call ids valid and unique
 * in their turn; and every acknowledged decision honoured.
 */
export function checkConversation(report: FuzzReport, result: ConvResult, frames: readonly Frame[] = result.ws.frames): void {
  const conv = result.plan.convId;
  checkGapless(report, `${conv} stream`, frames);
  checkPausesAndEnds(report, conv, frames);
  checkAgainstScript(report, conv, frames);
  checkAcks(report, result, frames);
}

function checkPausesAndEnds(report: FuzzReport, conv: string, frames: readonly Frame[]): void {
  const ended = new Set<string>();
  const callRun = new Map<string, string>();
  const pauses = new Map<string, { inference: string; resumed: number }>();
  for (const frame of frames) {
    const inference = inferenceOf(frame, callRun, pauses);
    if (frame.type === 'tool.start') callRun.set(frame.id, frame['inference_id']);
    if (inference !== undefined && ended.has(inference) && frame.type !== 'log') {
      report.fail(`${conv} run ${inference}`, `${frame.type} ${brief(frame.id, 60)} (seq ${frame.seq}) after its run.end`);
    }
    if (frame.type === 'debugger.pause') {
      // A pause restored after a restart is published again, with its id: only never after it resumed.
      const earlier = pauses.get(frame.id);
      if (earlier && earlier.resumed > 0) report.fail(`${conv} pause ${frame.id}`, `published again after it resumed (seq ${frame.seq})`);
      if (!earlier) pauses.set(frame.id, { inference: frame['metadata']?.inference_id, resumed: 0 });
    }
    if (frame.type === 'debugger.resume') {
      const pause = pauses.get(frame['pause_id']);
      if (!pause) report.fail(`${conv} pause ${frame['pause_id']}`, `resumed (seq ${frame.seq}, ${frame['reason']}) but never paused`);
      else if (++pause.resumed > 1) report.fail(`${conv} pause ${frame['pause_id']}`, `resumed twice (seq ${frame.seq}, ${frame['reason']})`);
    }
    if (frame.type === 'run.end') {
      if (ended.has(frame['inference_id'])) report.fail(`${conv} run ${frame['inference_id']}`, `a second run.end (seq ${frame.seq})`);
      ended.add(frame['inference_id']);
      for (const [id, pause] of pauses) {
        if (pause.inference === frame['inference_id'] && pause.resumed === 0) report.fail(`${conv} pause ${id}`, `never resumed, yet its run ended (seq ${frame.seq}, ${frame['status']})`);
      }
    }
  }
}

function inferenceOf(frame: Frame, callRun: ReadonlyMap<string, string>, pauses: ReadonlyMap<string, { inference: string }>): string | undefined {
  if (frame.type === 'tool.start' || frame.type === 'run.end' || frame.type === 'run.start') return frame['inference_id'];
  if (frame.type.startsWith('tool.')) return callRun.get(frame.id);
  if (frame.type === 'debugger.resume') return pauses.get(frame['pause_id'])?.inference;
  return frame['metadata']?.inference_id;
}

/** One inference as the stream shows it: its frames from its `llm.start` to its `llm.final` or `llm.error`. */
interface Inference {
  readonly start: Frame;
  /** Its tool.start frames, with their index among the frames. */
  readonly calls: { frame: Frame; index: number }[];
  final?: Frame;
  error?: Frame;
  thinking?: Frame;
}

function inferences(frames: readonly Frame[]): Inference[] {
  const found: Inference[] = [];
  const seen = new Set<string>();
  let open: Inference | undefined;
  frames.forEach((frame, index) => {
    if (frame.type === 'llm.start') {
      // A resumed inference (after a restart) is the same message again: it plays the same response.
      open = seen.has(frame.id) ? undefined : { start: frame, calls: [] };
      seen.add(frame.id);
      if (open) found.push(open);
    } else if (!open) return;
    else if (frame.type === 'tool.start') open.calls.push({ frame, index });
    else if (frame.type === 'llm.thinking.final') open.thinking = frame;
    else if (frame.type === 'llm.final') (open.final = frame), (open = undefined);
    else if (frame.type === 'llm.error') (open.error = frame), (open = undefined);
    else if (frame.type === 'run.end') open = undefined;
  });
  return found;
}

/** How deep `deep_result` nests its result for these arguments (the tools file's rule). */
const resultLevels = (args: unknown): number => {
  const levels = (args as { levels?: unknown } | null)?.levels;
  return typeof levels === 'number' ? Math.min(levels, 100_000) : 5000;
};

const isUsableId = (id: unknown): boolean => typeof id === 'string' && id.length > 0 && id.length <= 256 && !(id in Object.prototype);

function checkAgainstScript(report: FuzzReport, conv: string, frames: readonly Frame[]): void {
  const all = inferences(frames);
  const turnIds = new Map<string, Set<string>>();
  // A model may reuse an id in a later run (another turn): a call's frames are those up to the next tool.start of its id.
  const lifeEnd = new Map<number, number>();
  const nextOfId = new Map<string, number>();
  for (let i = frames.length - 1; i >= 0; i -= 1) {
    const frame = frames[i] as Frame;
    if (frame.type !== 'tool.start') continue;
    lifeEnd.set(i, nextOfId.get(frame.id) ?? frames.length);
    nextOfId.set(frame.id, i);
  }
  all.forEach((inference, k) => {
    const response = report.responses[k];
    const where = `${conv} ${report.responseLabel(k)} (llm.start seq ${inference.start.seq})`;
    if (!inference.final && !inference.error) {
      const end = frames.find((frame) => frame.type === 'run.end' && frame['inference_id'] === inference.start['metadata']?.inference_id);
      if (end?.['status'] !== 'cancelled') report.fail(where, `no llm.final and no llm.error, and its run ended ${brief(end?.['status'])}`);
      return;
    }
    if (!response) {
      if (inference.error?.['code'] !== 'script_exhausted') report.fail(where, `past the script's end: expected llm.error script_exhausted, got ${brief(inference.error ?? inference.final)}`);
      return;
    }
    if (response.error !== undefined) {
      if (inference.error?.['message'] !== response.error || inference.error?.['code'] !== 'scripted_error') report.fail(where, `expected llm.error "${brief(response.error, 60)}", got ${brief(inference.error ?? inference.final)}`);
      return;
    }
    if (!inference.final) return report.fail(where, `expected llm.final, got ${brief(inference.error)}`);
    if (inference.final['text'] !== (response.text ?? '')) report.fail(where, `llm.final text ${brief(inference.final['text'], 80)} is not the script's ${brief(response.text ?? '', 80)}`);
    if (response.reasoning && inference.thinking?.['text'] !== response.reasoning) report.fail(where, `llm.thinking.final ${brief(inference.thinking?.['text'], 80)} is not the script's reasoning`);
    const calls = response.calls ?? [];
    if (inference.calls.length !== calls.length) return report.fail(where, `${inference.calls.length} tool.start frames for ${calls.length} calls`);
    const refusals = report.refusals[k] as Refusal[];
    calls.forEach((call, j) => {
      const { frame: start, index } = inference.calls[j] as { frame: Frame; index: number };
      const refusal = refusals[j];
      const life = frames.slice(index + 1, lifeEnd.get(index));
      const at = `${where} call #${j} ${brief(call.name, 30)} id ${brief(call.id, 30)} with ${call.label}`;
      if (start['name'] !== call.name) report.fail(at, `tool.start names ${brief(start['name'], 40)}`);
      const ids = turnIds.get(start['turn_id']) ?? new Set<string>();
      turnIds.set(start['turn_id'], ids);
      if (!isUsableId(start.id)) report.fail(at, `tool.start id ${brief(start.id, 40)} is not a usable call id`);
      if (ids.has(start.id)) report.fail(at, `tool.start id ${brief(start.id, 40)} repeats an id of its turn`);
      if (isUsableId(call.id) && !ids.has(call.id as string) && start.id !== call.id) report.fail(at, `the model's usable id was replaced by ${brief(start.id, 40)}`);
      ids.add(start.id);
      const use = life.find((frame) => frame.type === 'tool.result' && frame.id === start.id);
      if (refusal) {
        const errors = refusal === 'either' ? [TOO_DEEP, TOO_LARGE] : [refusal];
        if (!isDeepStrictEqual(start['input'], {})) report.fail(at, `refused arguments shown in tool.start: ${brief(start['input'], 100)}`);
        if (!errors.includes(use?.['error']) || use?.['result'] !== null) report.fail(at, `expected tool.result error "${errors.join('" or "')}", got ${brief(use)}`);
        if (life.some((frame) => frame.type === 'tool.delta' && frame.id === start.id)) report.fail(at, 'refused, yet it ran (tool.delta)');
        if (life.some((frame) => frame.type === 'debugger.pause' && (frame['extra']?.tool_calls ?? []).some((c: { id: string }) => c.id === start.id))) report.fail(at, 'refused, yet a pause shows it');
      } else if ([TOO_DEEP, TOO_LARGE].includes(use?.['error'])) {
        report.fail(at, `arguments within the bounds refused: ${use?.['error']}`);
      }
      // A result nested deeper than 128 is an error, never stored or sent as it is (docs/protocol.md, Untrusted input).
      const ran = life.find((frame) => frame.type === 'tool.delta' && frame.id === start.id);
      const levels = call.name === 'deep_result' && ran ? resultLevels(ran['patch']?.input) : 0;
      if (levels > MAX_DEPTH && use?.['error'] !== 'result nested too deeply') report.fail(at, `a result ${levels} deep came back as ${brief(use)}`);
    });
  });
}

/** Every acknowledged decision: resumed with its reason, and its denials, edits and answers are what ran. */
function checkAcks(report: FuzzReport, result: ConvResult, frames: readonly Frame[]): void {
  const conv = result.plan.convId;
  for (const ack of result.acks) {
    const where = `${conv} run ${ack.inferenceId} pause ${ack.pauseId} acknowledged ${ack.reason}`;
    const resume = frames.find((frame) => frame.type === 'debugger.resume' && frame['pause_id'] === ack.pauseId);
    if (resume?.['reason'] !== ack.reason) {
      report.fail(where, `the decision was lost: resumed ${brief(resume?.['reason'])}`);
      continue;
    }
    // From the resume to its run's end: a later run may reuse the ids.
    const from = frames.indexOf(resume);
    const endAt = frames.findIndex((frame, i) => i > from && isEndOf(frame, ack.inferenceId));
    const after = frames.slice(from, endAt < 0 ? frames.length : endAt + 1);
    const resultOf = (id: string): Frame | undefined => after.find((frame) => frame.type === 'tool.result' && frame.id === id);
    const runEnd = after.find((frame) => isEndOf(frame, ack.inferenceId));
    if (runEnd?.['status'] === 'cancelled' || result.cancelled.has(ack.inferenceId)) continue;
    for (const id of ack.denied ?? []) {
      const use = resultOf(id);
      if (typeof use?.['error'] !== 'string' || !use['error'].startsWith('denied by operator')) report.fail(where, `denied call ${brief(id, 40)} got ${brief(use)}`);
      if (after.some((frame) => frame.type === 'tool.delta' && frame.id === id)) report.fail(where, `denied call ${brief(id, 40)} ran`);
    }
    for (const [id, args] of Object.entries(ack.edits ?? {})) {
      const exec = after.find((frame) => frame.type === 'tool.delta' && frame.id === id);
      if (!isDeepStrictEqual(exec?.['patch']?.input, args)) report.fail(where, `edited call ${brief(id, 40)} ran with ${brief(exec?.['patch'])}, not the edit ${brief(args)}`);
    }
    for (const [id, answer] of Object.entries(ack.answers ?? {})) {
      const use = resultOf(id);
      if (!isDeepStrictEqual(use?.['result'], answer) || use?.['error'] !== undefined) report.fail(where, `answered question ${brief(id, 40)} got ${brief(use)}, not the answer ${brief(answer)}`);
    }
  }
}

/** Every acknowledged decision is in the conversation's audit trail with its reason. */
export async function checkDecisionTrail(report: FuzzReport, base: string, result: ConvResult): Promise<void> {
  const conv = result.plan.convId;
  const reply = await checked(report, `${conv} decisions`, base, 'GET', `/conversations/${conv}/decisions`, undefined, [200]);
  if (reply?.status !== 200) return;
  const decisions = reply.body.decisions as { pause_id: string; reason: string }[];
  for (const ack of result.acks) {
    const found = decisions.filter((decision) => decision.pause_id === ack.pauseId);
    if (found.length !== 1 || found[0]?.reason !== ack.reason) report.fail(`${conv} pause ${ack.pauseId}`, `acknowledged ${ack.reason}, the audit trail has ${brief(found)}`);
  }
}
