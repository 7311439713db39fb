import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The files every instance serves (docs/protocol.md, "Script file" and "Tools file"). Each run asks
 * for tools once (`max_iterations: 1`) or twice (the whole script):
 * - `c1`: `add` (not idempotent), then, in the second round, `c2`: `add` and `c3`: `lookup` (idempotent).
 * Both tools append one JSON line per execution to the tools' log before they return, so the harness can
 * count executions of a call. A tool is not told its conversation (its context has only `signal` and
 * `tool_call_id`), so each execution returns an `exec` id that the `tool.result` frame carries back: that
 * is how an execution is tied to its conversation.
 */

export const ADD = 'add';
export const LOOKUP = 'lookup';

/** The calls of each round, as the script asks for them. */
export const ROUNDS: readonly (readonly ScriptCall[])[] = [
  [{ id: 'c1', name: ADD, arguments: { a: 1, b: 2 } }],
  [
    { id: 'c2', name: ADD, arguments: { a: 3, b: 4 } },
    { id: 'c3', name: LOOKUP, arguments: { key: 'k3' } },
  ],
];

export interface ScriptCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/** The text of the tool result of an interrupted call (docs/protocol.md, "Durability"). */
export const INTERRUPTED = 'interrupted';
/** The start of a denied call's tool error (docs/protocol.md, "Decisions"). */
export const DENIED = 'denied by operator';

/** One line of the tools' log. */
export interface Execution {
  readonly exec: string;
  readonly tool: string;
  readonly tool_call_id: string;
  readonly args: Record<string, unknown>;
  readonly pid: number;
  readonly at: number;
}

export interface Fixtures {
  readonly script: string;
  readonly tools: string;
  readonly toolLog: string;
}

export function writeFixtures(dir: string, toolMs: number): Fixtures {
  const script = join(dir, 'script.json');
  const tools = join(dir, 'tools.mjs');
  const toolLog = join(dir, 'executions.jsonl');
  const responses = [...ROUNDS.map((calls, i) => ({ text: `round ${i + 1}`, tool_calls: calls })), { text: 'done' }];
  writeFileSync(script, JSON.stringify({ responses }));
  writeFileSync(tools, toolsModule(toolLog, toolMs));
  return { script, tools, toolLog };
}

/**
 * The tools file. The log line is written (synchronously, one `write` with O_APPEND) before the tool
 * waits, so an execution cut short by a SIGKILL is still counted.
 */
function toolsModule(toolLog: string, toolMs: number): string {
  return `import { appendFileSync } from 'node:fs';
const LOG = ${JSON.stringify(toolLog)};
let executions = 0;
const record = (tool, args, context) => {
  const exec = process.pid + '-' + ++executions;
  appendFileSync(LOG, JSON.stringify({ exec, tool, tool_call_id: context.tool_call_id, args, pid: process.pid, at: Date.now() }) + '\\n');
  return exec;
};
const pause = () => new Promise((done) => setTimeout(done, ${toolMs}));
export default [
  {
    name: '${ADD}',
    description: 'Adds two numbers. Not idempotent: each execution is a side effect the soak counts.',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' }, note: { type: 'string' } }, required: ['a', 'b'] },
    execute: async (args, context) => {
      const exec = record('${ADD}', args, context);
      await pause();
      return { sum: args.a + args.b, args, exec };
    },
  },
  {
    name: '${LOOKUP}',
    description: 'Looks a key up. Idempotent: may run again after a takeover.',
    idempotent: true,
    parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
    execute: async (args, context) => {
      const exec = record('${LOOKUP}', args, context);
      await pause();
      return { value: 'v:' + args.key, args, exec };
    },
  },
];
`;
}

/** Every execution logged so far; a torn last line (a process killed mid-write) is counted apart. */
export function readExecutions(toolLog: string): { executions: Execution[]; unreadable: number } {
  if (!existsSync(toolLog)) return { executions: [], unreadable: 0 };
  const executions: Execution[] = [];
  let unreadable = 0;
  for (const line of readFileSync(toolLog, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      executions.push(JSON.parse(line) as Execution);
    } catch {
      unreadable += 1;
    }
  }
  return { executions, unreadable };
}
