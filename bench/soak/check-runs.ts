import { groupBy, short } from './check-decisions.js';
import type { Collected, Frame } from './collect.js';
import { clock } from './http.js';
import type { Observer } from './observers.js';
import type { Decision } from './operators.js';
import type { Violation } from './types.js';

/** A run the harness started, and how it must end. */
export interface PlannedRun {
  readonly conv_id: string;
  /** The instance it was started on. */
  readonly instance: number;
  /** 1: `max_iterations: 1`, one round of tools, ends `max_iterations`; 2: the whole script, ends `completed`. */
  readonly rounds: 1 | 2;
}

export const expectedStatus = (run: PlannedRun): string => (run.rounds === 1 ? 'max_iterations' : 'completed');

/**
 * Each run's log: `seq` 1..last_seq with no gap and no duplicate, every pause resolved once, one
 * `run.end` with the status its plan says. A run without `run.end` is told with where it stands
 * (its last frame, its open pauses and what the operators did about them).
 */
export function checkRuns(runs: readonly PlannedRun[], collected: ReadonlyMap<string, Collected>, decisions: readonly Decision[]): Violation[] {
  const byPause = groupBy(decisions, (decision) => decision.pause.pause_id);
  const violations: Violation[] = [];
  for (const run of runs) {
    const log = collected.get(run.conv_id);
    const conv_id = run.conv_id;
    if (!log?.frames) {
      violations.push({ kind: 'stored_log', conv_id, detail: `could not be read: ${log?.errors.join('; ')}` });
      continue;
    }
    const sequence = sequenceProblem(log.frames, log.last_seq) ?? messageIdProblem(log.frames);
    if (sequence) violations.push({ kind: 'stored_log', conv_id, detail: `${sequence} (/hydrate from instance ${log.from})` });
    for (const [pauseId, resumes] of groupBy(log.frames.filter((f) => f.type === 'debugger.resume'), (f) => f.id)) {
      if (resumes.length > 1) {
        violations.push({ kind: 'resolved_twice', conv_id, pause_id: pauseId, detail: `debugger.resume at ${resumes.map((f) => `seq ${f.seq} (${f.reason} by ${f.by})`).join(', ')}` });
      }
    }
    const ends = log.frames.filter((frame) => frame.type === 'run.end');
    if (ends.length === 0) violations.push({ kind: 'run_not_ended', conv_id, ...openPause(log.frames), detail: whereItStands(log.frames, byPause) });
    else if (ends.length > 1) violations.push({ kind: 'run_ended_otherwise', conv_id, detail: `${ends.length} run.end frames: ${ends.map((f) => `seq ${f.seq} ${f.status}`).join(', ')}` });
    else if (ends[0]?.status !== expectedStatus(run)) {
      violations.push({ kind: 'run_ended_otherwise', conv_id, detail: `ended ${ends[0]?.status}${ends[0]?.error ? ` (${short(ends[0].error)})` : ''}, expected ${expectedStatus(run)}` });
    }
  }
  return violations;
}

/** The first break in 1, 2, … last_seq, or undefined. */
function sequenceProblem(frames: readonly Frame[], lastSeq: number | undefined): string | undefined {
  for (let i = 0; i < frames.length; i += 1) {
    const seq = frames[i]?.seq;
    if (seq !== i + 1) return `/hydrate frame #${i + 1} has seq ${seq} (${frames[i]?.type}), expected ${i + 1}`;
  }
  return frames.length === lastSeq ? undefined : `/hydrate returned ${frames.length} frames, last_seq ${lastSeq}`;
}

/**
 * The first `llm.start` whose id breaks "`<inference_id>:<n>`, the run's n-th inference" (docs/protocol.md,
 * "What was sent to the model"): n starts at 1 and goes up by one; it may stay only after a `log` frame
 * of that run (a run resumed after a takeover sends its inference again as the same message).
 */
export function messageIdProblem(frames: readonly Pick<Frame, 'seq' | 'type' | 'id'>[]): string | undefined {
  const last = new Map<string, number>();
  const resumed = new Set<string>();
  for (const frame of frames) {
    if (frame.type === 'log') resumed.add(frame.id.split(':')[1] ?? '');
    if (frame.type !== 'llm.start') continue;
    const cut = frame.id.lastIndexOf(':');
    const [inferenceId, n] = [frame.id.slice(0, cut), Number(frame.id.slice(cut + 1))];
    const before = last.get(inferenceId) ?? 0;
    const allowed = resumed.has(inferenceId) ? [before, before + 1] : [before + 1];
    if (!allowed.includes(n)) return `llm.start at seq ${frame.seq} is ${frame.id}, after message ${before} of that run`;
    last.set(inferenceId, n);
    resumed.delete(inferenceId);
  }
  return undefined;
}

/** The pause a run waits at, when its log ends in one. */
function openPause(frames: readonly Frame[]): { pause_id?: string } {
  const resumed = new Set(frames.filter((f) => f.type === 'debugger.resume').map((f) => f.id));
  const open = frames.filter((f) => f.type === 'debugger.pause' && !resumed.has(f.id)).at(-1);
  return open ? { pause_id: open.id } : {};
}

function whereItStands(frames: readonly Frame[], byPause: ReadonlyMap<string, readonly Decision[]>): string {
  const last = frames.at(-1);
  const { pause_id } = openPause(frames);
  const at = last ? `log ends at seq ${last.seq} ${last.type}` : 'empty log';
  if (!pause_id) return `no run.end; ${at}`;
  const tried = byPause.get(pause_id) ?? [];
  const acted = tried.length === 0 ? 'no operator decided it' : `operators: ${tried.map((d) => `${d.body.action} -> ${d.result}`).join(', ')}`;
  return `no run.end; ${at}; pause ${pause_id} still open (${acted})`;
}

/**
 * Each observer's frames: no gap and no duplicate as they arrived, each the same (type, id) as the
 * stored frame of its seq, and, when the run ended, every frame up to its `run.end`.
 */
export function checkObservers(observers: readonly Observer[], collected: ReadonlyMap<string, Collected>): Violation[] {
  const violations: Violation[] = [];
  for (const observer of observers) {
    const stored = collected.get(observer.conv_id)?.frames;
    if (!stored) continue;
    // Which side numbers model messages wrongly, when they differ: first, so it is not cut off.
    const wrongIds = messageIdProblem(observer.frames);
    const issues = [...(wrongIds ? [`observer: ${wrongIds}`] : []), ...observer.issues];
    const bySeq = new Map(stored.map((frame) => [frame.seq, frame]));
    for (const frame of observer.frames) {
      const same = bySeq.get(frame.seq);
      if (!same) issues.push(`seq ${frame.seq} (${frame.type}) is not in /hydrate`);
      else if (same.type !== frame.type || same.id !== frame.id) issues.push(`seq ${frame.seq}: got ${frame.type} ${frame.id}, /hydrate has ${same.type} ${same.id}`);
    }
    const ended = stored.some((frame) => frame.type === 'run.end');
    const reached = observer.frames.at(-1)?.seq ?? 0;
    const lastStored = stored.at(-1)?.seq ?? 0;
    if (ended && reached < lastStored) issues.push(`stopped at seq ${reached} of ${lastStored}`);
    if (issues.length > 0) {
      const via = observer.connections.map((c) => `instance ${c.instance} from seq ${c.since_seq} at ${clock(c.at)}`).join(', ');
      const shown = `${issues.slice(0, 5).join('; ')}${issues.length > 5 ? `; and ${issues.length - 5} more` : ''} (connected to ${via}; /hydrate from instance ${collected.get(observer.conv_id)?.from})`;
      violations.push({ kind: 'observer_stream', conv_id: observer.conv_id, detail: shown });
    }
  }
  return violations;
}
