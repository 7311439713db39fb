import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { concatMap, EMPTY, expand, from, last, lastValueFrom, map, of, toArray, type Observable } from 'rxjs';
import type { Block, Engine, EngineEvent, Tool } from '../src/index.js';

/**
 * The baseline of the durable step figures (bench/durable-step.ts): `loop_step_realistic`'s bare RxJS
 * `expand` loop (baselines.ts) made durable by hand over `better-sqlite3`, the best a hand-written
 * durable loop does. It writes what a run needs to be resumed and replayed, as stepwise does: the
 * same frames' wire text (each frame built and `JSON.stringify`-ed as the frame codec makes it),
 * the blocks a run adds, and a checkpoint of the latest phase boundary (its phase, iteration, the
 * calls about to run, the engine's state), with the store's pragmas (WAL, `synchronous = NORMAL`,
 * an exclusive lock, the same page size and checkpoint interval).
 *
 * It commits as seldom as the durability promise allows (docs/protocol.md, Durability): with a tool
 * that is not idempotent, once before each tools phase (the call's start is committed before it
 * runs), and once at the run's end; with an idempotent one, once at the run's end. Between commits it
 * stages what it would write and writes it in one transaction: a row of frame texts, a row of the
 * blocks added since, and the checkpoint of the last boundary once, not once per boundary passed.
 */

type ToolCallEvent = Extract<EngineEvent, { type: 'tool-call' }>;
type Frame = Record<string, unknown>;

interface Run {
  readonly convId: string;
  readonly inferenceId: string;
  readonly turnId: string;
  readonly sessionId: string;
  readonly model: string;
  seq: number;
  /** What is staged for the next transaction. */
  frames: string[];
  firstSeq: number;
  added: Block[];
  blockCount: number;
  checkpoint: Frame | undefined;
  conversation: string | undefined;
}

interface LoopState {
  readonly blocks: readonly Block[];
  readonly iteration: number;
  readonly done: boolean;
}

/** The hand-written durable loop, on a database file of its own; `close` ends it. */
export interface DurableBaseline {
  /** One run in a new conversation; resolves with its number of inferences once all of it is committed. */
  run(engine: Engine, tool: Tool, convId: string, maxIterations: number): Promise<number>;
  close(): void;
}

export function createDurableBaseline(dataDir: string, idempotent: boolean): DurableBaseline {
  const db = openDatabase(dataDir);
  const commit = createCommit(db);
  return {
    run: (engine, tool, convId, maxIterations) => {
      const run = startRun(convId, engine.model);
      return lastValueFrom(loop(engine, tool, run, maxIterations, idempotent, commit)).then((inferences) => {
        push(run, { type: 'run.end', id: run.inferenceId, inference_id: run.inferenceId, status: 'completed' });
        run.checkpoint = undefined;
        commit(run, true);
        return inferences;
      });
    },
    close: () => db.close(),
  };
}

function openDatabase(dataDir: string): BetterSqlite3.Database {
  mkdirSync(dataDir, { recursive: true });
  const Driver = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
  const db = new Driver(join(dataDir, 'baseline.db'));
  // The SQLite store's pragmas (src/store/sqlite/open-database.ts).
  db.pragma('locking_mode = EXCLUSIVE');
  db.pragma('page_size = 8192');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 4096');
  db.exec(`
    CREATE TABLE IF NOT EXISTS conversations (conv_id TEXT PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, conv_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, texts TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS frames_by_conversation ON frames (conv_id, last_seq);
    CREATE TABLE IF NOT EXISTS blocks (conv_id TEXT NOT NULL, turn_id TEXT NOT NULL, start INTEGER NOT NULL, blocks TEXT NOT NULL, PRIMARY KEY (conv_id, turn_id, start)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS checkpoints (conv_id TEXT NOT NULL, inference_id TEXT NOT NULL, checkpoint TEXT NOT NULL, PRIMARY KEY (conv_id, inference_id));
  `);
  return db;
}

/** One transaction of what a run staged; `ended`: its checkpoint goes, it has nothing to resume. */
function createCommit(db: BetterSqlite3.Database): (run: Run, ended?: boolean) => void {
  const putConversation = db.prepare(`INSERT OR REPLACE INTO conversations (conv_id, record) VALUES (?, ?)`);
  const putFrames = db.prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, texts) VALUES (?, ?, ?, ?)`);
  const putBlocks = db.prepare(`INSERT OR REPLACE INTO blocks (conv_id, turn_id, start, blocks) VALUES (?, ?, ?, ?)`);
  const putCheckpoint = db.prepare(
    `INSERT INTO checkpoints (conv_id, inference_id, checkpoint) VALUES (?, ?, ?) ON CONFLICT (conv_id, inference_id) DO UPDATE SET checkpoint = excluded.checkpoint`,
  );
  const deleteCheckpoint = db.prepare(`DELETE FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const transaction = db.transaction((run: Run, ended: boolean) => {
    if (run.conversation !== undefined) putConversation.run(run.convId, run.conversation);
    if (run.frames.length > 0) putFrames.run(run.convId, run.firstSeq, run.seq, run.frames.join('\n'));
    if (run.added.length > 0) putBlocks.run(run.convId, run.turnId, run.blockCount, JSON.stringify(run.added));
    if (ended) deleteCheckpoint.run(run.convId, run.inferenceId);
    else if (run.checkpoint) putCheckpoint.run(run.convId, run.inferenceId, JSON.stringify(run.checkpoint));
  });
  return (run, ended = false) => {
    transaction(run, ended);
    run.conversation = undefined;
    run.blockCount += run.added.length;
    run.added = [];
    run.frames = [];
    run.firstSeq = run.seq + 1;
  };
}

function startRun(convId: string, model: string): Run {
  const [inferenceId, turnId, sessionId] = [`inf_${convId}`, `turn_${convId}`, `sess_${convId}`];
  const conversation = JSON.stringify({ conv_id: convId, session_id: sessionId, created_at: Date.now(), step: { enabled: false } });
  const run: Run = { convId, inferenceId, turnId, sessionId, model, seq: 0, frames: [], firstSeq: 1, added: [], blockCount: 0, checkpoint: undefined, conversation };
  push(run, { type: 'run.start', id: run.inferenceId, inference_id: run.inferenceId, turn_id: run.turnId, session_id: run.sessionId });
  return run;
}

/** One frame's wire text, staged. */
function push(run: Run, event: Frame): void {
  run.seq += 1;
  event['seq'] = run.seq;
  run.frames.push(JSON.stringify({ sem: true, event }));
}

/** A phase boundary: the blocks it added and its checkpoint, staged. */
function boundary(run: Run, engine: Engine, added: readonly Block[], next: 'tools' | 'inference', iteration: number, calls: readonly ToolCallEvent[]): void {
  for (const block of added) run.added.push(block);
  run.checkpoint = {
    conv_id: run.convId,
    session_id: run.sessionId,
    inference_id: run.inferenceId,
    turn_id: run.turnId,
    next,
    iteration,
    at_ms: Date.now(),
    ...(next === 'tools' ? { running_tool_call_ids: calls.map((call) => call.id) } : {}),
    engine_state: engine.state?.(run.convId) ?? null,
  };
}

function loop(engine: Engine, tool: Tool, run: Run, maxIterations: number, idempotent: boolean, commit: (run: Run) => void): Observable<number> {
  const signal = new AbortController().signal;
  const user: Block = { id: 'u', kind: 'user', role: 'user', payload: { text: 'go' } };
  run.added.push(user);
  const initial: LoopState = { blocks: [user], iteration: 0, done: false };
  const tools = [{ name: tool.name, description: tool.description, parameters: tool.parameters }];
  return of(initial).pipe(
    expand((state) =>
      state.done || state.iteration >= maxIterations
        ? EMPTY
        : engine.infer({ conv_id: run.convId, session_id: run.sessionId, inference_id: run.inferenceId, turn_id: run.turnId, blocks: state.blocks, tools }).pipe(
            toArray(),
            concatMap((events) => {
              const started = Date.now();
              const { blocks, calls } = inferred(run, events, state.iteration);
              if (calls.length === 0) {
                boundary(run, engine, blocks, 'inference', state.iteration + 1, calls);
                return of<LoopState>({ blocks: [...state.blocks, ...blocks], iteration: state.iteration + 1, done: true });
              }
              boundary(run, engine, blocks, 'tools', state.iteration + 1, calls);
              // The calls' start is committed before they run, unless running one again is harmless.
              if (!idempotent) commit(run);
              return from(Promise.all(calls.map((call) => runTool(run, tool, call, signal, started)))).pipe(
                map((uses): LoopState => {
                  boundary(run, engine, uses, 'inference', state.iteration + 1, []);
                  return { blocks: [...state.blocks, ...blocks, ...uses], iteration: state.iteration + 1, done: false };
                }),
              );
            }),
          ),
    ),
    last(),
    map((state) => state.iteration),
  );
}

/** One inference's frames, staged, and its answer as blocks: its text, then its tool calls. */
function inferred(run: Run, events: readonly EngineEvent[], iteration: number): { blocks: Block[]; calls: ToolCallEvent[] } {
  const id = `${run.inferenceId}:${iteration + 1}`;
  const metadata = { inference_id: run.inferenceId, turn_id: run.turnId, session_id: run.sessionId, model: run.model };
  push(run, { type: 'llm.start', id, role: 'assistant', metadata });
  let text = '';
  const calls: ToolCallEvent[] = [];
  for (const event of events) {
    if (event.type === 'text-delta') {
      text += event.delta;
      push(run, { type: 'llm.delta', id, delta: event.delta, cumulative: text, metadata });
    } else if (event.type === 'tool-call') {
      calls.push(event);
      push(run, { type: 'tool.start', id: event.id, name: event.name, input: event.args, inference_id: run.inferenceId, turn_id: run.turnId });
    } else if (event.type === 'finished') {
      const { usage, stop_reason } = event;
      push(run, { type: 'llm.final', id, text, metadata: { ...metadata, usage, stop_reason, duration_ms: 0 } });
    }
  }
  const blocks: Block[] = text ? [{ id: `t${iteration}`, kind: 'llm_text', role: 'assistant', payload: { text } }] : [];
  for (const call of calls) {
    blocks.push({ id: `c${call.id}`, kind: 'tool_call', role: 'assistant', payload: { id: call.id, name: call.name, args: call.args } });
  }
  return { blocks, calls };
}

/** Validates and runs one call whose tool answers with a Promise, its frames staged. */
async function runTool(run: Run, tool: Tool, call: ToolCallEvent, signal: AbortSignal, started: number): Promise<Block> {
  push(run, { type: 'tool.delta', id: call.id, name: call.name, patch: { exec: true, input: call.args } });
  const validation = tool.validate(call.args);
  const result: unknown = validation.ok ? await tool.execute(validation.value, { signal, tool_call_id: call.id }) : null;
  const error = validation.ok ? {} : { error: validation.issues.join('; ') };
  push(run, { type: 'tool.result', id: call.id, name: call.name, result, ...error });
  push(run, { type: 'tool.done', id: call.id, name: call.name, duration_ms: Date.now() - started });
  return { id: `u${call.id}`, kind: 'tool_use', role: 'tool', payload: { id: call.id, result, ...error } };
}
