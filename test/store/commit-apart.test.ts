import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom } from 'rxjs';
import { PartialCommitFailure } from '../../src/core/commit-failure.js';
import type { DecisionRecord, StoredFrame } from '../../src/core/store.js';
import { createSqliteStore, STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';

const decision = (conv_id: string, reason: string): DecisionRecord => ({ conv_id, pause_id: `p-${conv_id}-${reason}`, phase: 'after_inference', inference_id: `i-${conv_id}`, reason, by: 'local', at_ms: 1 });
const frame = (conv_id: string, seq: number): StoredFrame => ({ seq, event: { type: 'log', conv_id, level: 'info', message: `frame ${seq}` } as never });
const outcome = (done: Promise<unknown>): Promise<string> => done.then(() => 'committed', (error: Error) => `failed: ${error.message}`);

/**
 * docs/protocol.md, A 200 means committed: a batch that fails is written again one conversation at a
 * time, so only the conversation whose own write the store refuses hears of it; the others' writes of
 * that batch are committed, and the refused conversation's log goes on from its last committed frame.
 */
describe('a SQLite batch that fails for one conversation', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-apart-'));
    createSqliteStore({ dataDir: dir }).close();
    // A real refusal in the real file: a trigger of the test's own, on one conversation's decisions.
    const db = new Database(join(dir, STORE_FILE));
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON decisions WHEN NEW.conv_id = 'bad' AND NEW.decision LIKE '%"refused"%'
      BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END`);
    db.close();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should commit the other conversations\' writes of the batch and fail only the refused one\'s', async () => {
    const store = createSqliteStore({ dataDir: dir });
    const frames = [store.appendFrames([frame('good', 1)]), store.appendFrames([frame('bad', 1)])];
    store.recordDecision(decision('good', 'continued'));
    store.recordDecision(decision('bad', 'refused'));
    const good = outcome(lastValueFrom(store.committed$('good'), { defaultValue: undefined }));
    const bad = outcome(lastValueFrom(store.committed$('bad'), { defaultValue: undefined }));
    // A reader of the whole batch is not failed by one conversation's refusal.
    const flushed = outcome(store.flush());
    expect(await good).toBe('committed');
    expect(await bad).toBe('failed: refused by the test trigger');
    expect(await flushed).toBe('committed');
    // The appends of one batch share its wait, which names the conversations whose writes failed.
    const shared = (await lastValueFrom(frames[0] as never).catch((error: unknown) => error)) as PartialCommitFailure;
    expect(shared).toBeInstanceOf(PartialCommitFailure);
    expect([...shared.failures.keys()]).toEqual(['bad']);

    expect((await store.decisions('good')).map((d) => d.reason)).toEqual(['continued']);
    expect(await store.decisions('bad')).toEqual([]);
    expect((await store.frames('good', { since_seq: 0 })).frames.map((f) => f.seq)).toEqual([1]);
    expect((await store.frames('bad', { since_seq: 0 })).frames).toEqual([]);

    // The refused conversation goes on being written, from its last committed frame.
    store.appendFrames([frame('bad', 1)]);
    store.recordDecision(decision('bad', 'continued'));
    expect(await outcome(lastValueFrom(store.committed$('bad'), { defaultValue: undefined }))).toBe('committed');
    expect((await store.frames('bad', { since_seq: 0 })).frames.map((f) => f.seq)).toEqual([1]);
    expect((await store.decisions('bad')).map((d) => d.reason)).toEqual(['continued']);
    store.close();
  });
});
