import { groupBy, short } from './check-decisions.js';
import type { Collected, Frame } from './collect.js';
import { ADD, INTERRUPTED, type Execution } from './fixtures.js';
import type { Violation } from './types.js';

/**
 * A non-idempotent call must run at most once (docs/protocol.md, "Durability": a call that was running
 * when its owner stopped gets "interrupted", it is not run again).
 *
 * A tool is not told its conversation, so an execution is tied to one by the `exec` id its result
 * carries in a `tool.result` frame, or, for edited arguments, by the conversation named in them. An
 * execution tied to neither produced a result no conversation kept: that is allowed once for each
 * call that ended `interrupted` with the same call id and arguments (the run was cut while it ran),
 * and every one beyond that ran a call a second time (or ran a denied one).
 */
export function checkExecutions(executions: readonly Execution[], collected: ReadonlyMap<string, Collected>, origin: Origin): Violation[] {
  const resultOf = execIndex(collected);
  const perCall = new Map<string, Execution[]>();
  const untied: Execution[] = [];
  for (const execution of executions.filter((e) => e.tool === ADD)) {
    const convId = resultOf.get(execution.exec) ?? convNamedIn(execution.args);
    if (convId === undefined) untied.push(execution);
    else append(perCall, `${convId} ${execution.tool_call_id}`, execution);
  }
  const violations: Violation[] = [];
  for (const [key, runs] of perCall) {
    if (runs.length < 2) continue;
    const [conv_id, callId] = key.split(' ') as [string, string];
    violations.push({ kind: 'executed_twice', conv_id, detail: `${ADD} ${callId} executed ${runs.length} times: ${runs.map(describe).join('; ')}` });
  }
  violations.push(...unaccounted(untied, collected, perCall, origin));
  return violations;
}

/** Where runs started and which PIDs each instance had: to name the conversations an untied execution may belong to. */
export interface Origin {
  /** The instances that owned a conversation at some point: started there, or took it over. */
  readonly ownedBy: (convId: string) => ReadonlySet<number>;
  readonly pids: readonly (readonly number[])[];
  /** `<conv_id> <tool_call_id>` -> from the first send of each 200 decision for that call's pause to a little after its answer. */
  readonly decided: ReadonlyMap<string, readonly { readonly from: number; readonly to: number }[]>;
}

/** exec id -> the conversation whose `tool.result` carries it. */
function execIndex(collected: ReadonlyMap<string, Collected>): Map<string, string> {
  const index = new Map<string, string>();
  for (const { conv_id, frames } of collected.values()) {
    for (const frame of frames ?? []) {
      const exec = frame.type === 'tool.result' ? frame.result?.exec : undefined;
      if (typeof exec === 'string') index.set(exec, conv_id);
    }
  }
  return index;
}

/** The conversation an operator's edit wrote into the arguments (`edited <conv_id> <pause_id>`). */
function convNamedIn(args: Record<string, unknown>): string | undefined {
  const note = typeof args['note'] === 'string' ? args['note'] : undefined;
  return note?.startsWith('edited ') ? note.split(' ')[1] : undefined;
}

/** Untied executions per (call id, arguments), against the interrupted calls that may explain them. */
function unaccounted(untied: readonly Execution[], collected: ReadonlyMap<string, Collected>, tied: ReadonlyMap<string, Execution[]>, origin: Origin): Violation[] {
  const interrupted = interruptedCalls(collected, tied);
  const violations: Violation[] = [];
  for (const [key, executions] of groupBy(untied, (e) => `${e.tool_call_id} ${canonical(e.args)}`)) {
    const explained = interrupted.get(key) ?? [];
    if (executions.length <= explained.length) continue;
    const convs = explained.length > 0 ? `interrupted calls: ${explained.join(', ')}` : 'no call was interrupted';
    const suspects = [...new Set(executions.flatMap((execution) => suspectsOf(execution, collected, origin)))];
    violations.push({
      kind: 'executed_twice',
      ...(suspects.length === 1 ? { conv_id: suspects[0] } : {}),
      detail:
        `${executions.length - explained.length} execution(s) of ${ADD} ${key} whose result no conversation kept (${convs}): ${executions.map(describe).join('; ')}; ` +
        `suspects (runs that process's instance owned, being decided when it ran, whose ${executions[0]?.tool_call_id} result is missing or from another process): ${listed(suspects)}`,
    });
  }
  return violations;
}

/**
 * The likely owners of an execution no result carries: runs that instance owned at some point (started
 * there or taken over), whose call was being decided when it ran (from the decision's send to a second
 * after its 200), and whose result for that call is missing or came from another process (the call ran
 * again after a takeover).
 */
function suspectsOf(execution: Execution, collected: ReadonlyMap<string, Collected>, origin: Origin): string[] {
  const instance = origin.pids.findIndex((pids) => pids.includes(execution.pid));
  const suspects: string[] = [];
  for (const { conv_id, frames } of collected.values()) {
    const windows = origin.decided.get(`${conv_id} ${execution.tool_call_id}`) ?? [];
    const around = windows.some((window) => window.from <= execution.at && execution.at <= window.to);
    if (!origin.ownedBy(conv_id).has(instance) || !around) continue;
    const exec = frames?.find((frame) => frame.type === 'tool.result' && frame.id === execution.tool_call_id)?.result?.exec;
    if (typeof exec !== 'string' || !exec.startsWith(`${execution.pid}-`)) suspects.push(conv_id);
  }
  return suspects;
}


const listed = (convIds: readonly string[]): string =>
  convIds.length === 0 ? 'none' : convIds.length <= 10 ? convIds.join(', ') : `${convIds.slice(0, 10).join(', ')} and ${convIds.length - 10} more`;

/** (call id, arguments) -> conversations whose call of that id ended `interrupted` with no execution tied to it. */
function interruptedCalls(collected: ReadonlyMap<string, Collected>, tied: ReadonlyMap<string, Execution[]>): Map<string, string[]> {
  const calls = new Map<string, string[]>();
  for (const { conv_id, frames } of collected.values()) {
    for (const result of (frames ?? []).filter(isInterrupted)) {
      if (tied.has(`${conv_id} ${result.id}`)) continue;
      const start = frames?.find((frame) => frame.type === 'tool.start' && frame.id === result.id);
      append(calls, `${result.id} ${canonical(start?.input)}`, conv_id);
    }
  }
  return calls;
}

const isInterrupted = (frame: Frame): boolean => frame.type === 'tool.result' && frame.name === ADD && typeof frame.error === 'string' && frame.error.startsWith(INTERRUPTED);

function append<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}

/** JSON with sorted keys: the same arguments compare equal whatever order their keys came in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

const describe = (execution: Execution): string => `exec ${execution.exec} (pid ${execution.pid}) at ${new Date(execution.at).toISOString()} with ${short(execution.args)}`;
