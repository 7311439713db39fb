import { join } from 'node:path';
import { entry, median, percentile, type BenchEntry } from './bench-entry.js';
import type { LoadedLib } from './lib.js';
import { pauseRuns, watchDeadlines } from './paused.js';
import { buildStore, timeStart } from './restart.js';
import { countingReads, measureResume } from './resume-hibernated.js';
import { collectGarbage, createEchoTool, createStepEngine, nowUs, settle, settledHeap, within } from './scenario.js';

/**
 * Hibernated pauses (docs/protocol.md, Durability):
 * - `paused_resident_per_run`: KB of heap per paused run with `runs` (100 000) runs paused at once on
 *   the SQLite store, once every one has hibernated. Beside it `paused_sqlite_heap_per_run`, the same
 *   runs measured just after they paused, before any could hibernate: the cost hibernation removes.
 * - `resume_hibernated`: ms, median: `POST /debug/continue` of a hibernated pause to the next WebSocket
 *   frame of its conversation (its `debugger.resume`), as `resume_wire` times a resident one; baseline:
 *   the same on the same store with hibernation off. Beside it
 *   `resume_hibernated_next_pause`: the same continue to the run's next `debugger.pause`, which the run
 *   reaches only once rebuilt from its checkpoint and through its tool; and `resume_hibernated_after_idle`,
 *   each continue after 150 ms of idle (bench/resume-hibernated.ts has both forms).
 * - `paused_resolve_after_deadline_hibernated`: then those runs' deadlines pass (45 s after they
 *   paused): ms from a pause's deadline to its `resumed`, the latest of all, as `paused_resolve_after_deadline`.
 * - `restart_recover_100k`: ms from the CLI's start to its ready line with `restartRuns` (100 000)
 *   paused runs in the store, as `restart_recover` measures 10 000.
 */
export interface HibernateBenchConfig {
  readonly runs?: number;
  readonly resumeSamples?: number;
  readonly restartRuns?: number;
  /** Which figures: any of `resident`, `resume`, `restart`. Default all. */
  readonly cases?: readonly string[];
}

const DEFAULT_HIBERNATE_BENCH = Object.freeze({ runs: 100_000, resumeSamples: 100, restartRuns: 100_000, cases: ['resident', 'resume', 'restart'] });
const KB = 1024;
const HIBERNATE_AFTER_MS = 1000;
const DEADLINE_MS = 45_000;

async function measureResident({ lib, stores }: LoadedLib, dataDir: string, runs: number) {
  const counted = countingReads(stores.createSqliteStore({ dataDir }));
  // Long enough to pause them all and let them hibernate; then every deadline passes, all at about once.
  const config = { engine: createStepEngine(lib, 1), tools: [createEchoTool(lib)], pauseTimeoutMs: DEADLINE_MS, hibernateAfterMs: HIBERNATE_AFTER_MS, store: counted.store };
  const sw = lib.createStepwise({ ...config, retention: { maxSessions: runs + 1000 } });
  const before = settledHeap();
  const started = nowUs();
  const handles = pauseRuns(sw, runs);
  const startMs = (nowUs() - started) / 1000;
  // Synchronously after the last run paused: no hibernation can have run yet.
  const resident = settledHeap();
  await within(
    (async () => {
      while (counted.reads() < runs) await new Promise((done) => setTimeout(done, 50));
      for (let i = 0; i < 20; i += 1) await settle();
    })(),
    HIBERNATE_AFTER_MS + 120_000,
    'the hibernation of every paused run',
  );
  const hibernated = settledHeap();
  if (sw.controller.pending().length !== runs) throw new Error('hibernate bench: a hibernated pause went missing');
  const watch = watchDeadlines(sw, runs);
  const slack = watch.firstDeadline - Date.now();
  await within(watch.all, DEADLINE_MS + 300_000, 'the deadlines of the hibernated runs');
  watch.stop();
  handles.length = 0;
  await sw.suspend();
  await counted.store.close();
  return { resident: (resident - before) / runs / KB, hibernated: (hibernated - before) / runs / KB, startMs, lateness: watch.latest(), slack };
}

async function measureRestart(loaded: LoadedLib, dataDir: string, runs: number) {
  const built = nowUs();
  await buildStore(loaded, dataDir, runs);
  const buildMs = (nowUs() - built) / 1000;
  const cliMain = new URL('cli/main.js', loaded.srcUrl).href;
  // The garbage of building 100 000 runs collected first: left to V8, it was collected on the second
  // core while the first CLI started, and that start took a second longer than the next.
  collectGarbage();
  const times = [await timeStart(cliMain, dataDir), await timeStart(cliMain, dataDir)];
  return { times, buildMs };
}

export async function runHibernateBenchmarks(loaded: LoadedLib, dataRoot: string, config: HibernateBenchConfig = {}): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const { runs, resumeSamples, restartRuns, cases } = { ...DEFAULT_HIBERNATE_BENCH, ...config };
  const entries: BenchEntry[] = [];
  const notes: string[] = [];
  if (cases.includes('resident')) {
    const { resident, hibernated, startMs, lateness, slack } = await measureResident(loaded, join(dataRoot, 'hibernate-resident'), runs);
    entries.push(
      entry('paused_resident_per_run', hibernated, 'KB'),
      entry('paused_sqlite_heap_per_run', resident, 'KB'),
      entry('paused_resolve_after_deadline_hibernated', lateness, 'ms'),
    );
    notes.push(`paused_resident_per_run: ${runs} runs paused on SQLite in ${Math.round(startMs)} ms; ${resident.toFixed(2)} KB each before hibernating, ${hibernated.toFixed(2)} KB after`);
    notes.push(`paused_resolve_after_deadline_hibernated: the latest of ${runs} hibernated pauses resolved ${Math.round(lateness)} ms after its deadline; the first deadline came ${Math.round(slack)} ms after all had hibernated`);
  }
  if (cases.includes('resume')) {
    const resident = await measureResume(loaded, join(dataRoot, 'hibernate-resume-resident'), resumeSamples, Infinity, 'busy');
    const { toFrame, toPause } = await measureResume(loaded, join(dataRoot, 'hibernate-resume'), resumeSamples, 50, 'busy');
    const residentIdle = await measureResume(loaded, join(dataRoot, 'hibernate-resume-resident-idle'), resumeSamples, Infinity, 'idle');
    const idle = await measureResume(loaded, join(dataRoot, 'hibernate-resume-idle'), resumeSamples, 50, 'idle');
    entries.push(
      entry('resume_hibernated', median(toFrame), 'ms', median(resident.toFrame)),
      entry('resume_hibernated_p99', percentile(toFrame, 99), 'ms', percentile(resident.toFrame, 99)),
      entry('resume_hibernated_next_pause', median(toPause), 'ms', median(resident.toPause)),
      entry('resume_hibernated_after_idle', median(idle.toFrame), 'ms', median(residentIdle.toFrame)),
    );
  }
  if (cases.includes('restart')) {
    const { times, buildMs } = await measureRestart(loaded, join(dataRoot, 'hibernate-restart'), restartRuns);
    entries.push(entry('restart_recover_100k', median(times), 'ms'));
    notes.push(`restart_recover_100k: ${restartRuns} paused runs stored in ${Math.round(buildMs)} ms; CLI starts: ${times.map((t) => Math.round(t)).join(', ')} ms`);
  }
  return { entries, notes };
}
