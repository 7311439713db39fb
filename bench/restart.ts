import { spawn } from 'node:child_process';
import { entry, median, type BenchEntry } from './bench-entry.js';
import type { LoadedLib } from './lib.js';
import { collectGarbage, createEchoTool, createStepEngine, nowUs, within } from './scenario.js';

/**
 * `restart_recover` (README.md, Benchmarks): ms from process start to the CLI's ready line (`stepwise listening
 * on …`) with `runs` (10 000) paused runs in a SQLite store.
 *
 * The store is built by the runtime itself, so its rows have exactly the shape a server writes:
 * `runs` conversations in step mode, each run paused at `after_inference` on its first tool call
 * (conversation, step setting, running turn, checkpoint, engine state, pause), then suspended as
 * SIGTERM does and the store closed. Deadlines are an hour away, so none passes during the bench.
 * Then the real CLI is started `starts` times on that data dir (`serve --port 0 --data-dir DIR`,
 * a bare environment: the scripted demo engine), each killed with SIGKILL once ready so the next
 * start finds the same store; the figure is the median. The CLI runs the same build the bench
 * measures (what bin/stepwise.js does with dist/).
 * `store_recover_load` beside it: ms to open that store and `load()` it in process, the store's
 * share of a restart.
 */

export interface RestartBenchConfig {
  readonly runs?: number;
  readonly starts?: number;
}

const DEFAULT_RESTART_BENCH = Object.freeze({ runs: 10_000, starts: 3 });
const PAUSE_TIMEOUT_MS = 3_600_000;
const READY = /stepwise listening on http:\/\//;

export async function buildStore({ lib, stores }: LoadedLib, dataDir: string, runs: number): Promise<void> {
  const store = stores.createSqliteStore({ dataDir });
  const sw = lib.createStepwise({ engine: createStepEngine(lib, 1), tools: [createEchoTool(lib)], pauseTimeoutMs: PAUSE_TIMEOUT_MS, store });
  for (let i = 0; i < runs; i += 1) {
    const session = sw.sessions.open();
    sw.controller.enable(session.session_id);
    session.start({ prompt: 'What is the weather in Paris?' });
  }
  const paused = sw.controller.pending().length;
  await sw.suspend();
  await store.close();
  if (paused !== runs) throw new Error(`restart bench: ${paused} of ${runs} runs paused`);
}

/** Starts the CLI on `dataDir`; resolves with the ms from spawn to its ready line, after killing it. */
export async function timeStart(cliMainUrl: string, dataDir: string): Promise<number> {
  const shim = `import(${JSON.stringify(cliMainUrl)}).then(({ main }) => main(process.argv.slice(1))).catch((e) => { console.error(e); process.exit(1); })`;
  const started = nowUs();
  const child = spawn(process.execPath, ['--input-type=module', '-e', shim, '--', 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env['PATH'] ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  try {
    return await within(
      new Promise<number>((resolve, reject) => {
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (READY.test(out)) resolve((nowUs() - started) / 1000);
        });
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        void exited.then(() => reject(new Error(`restart bench: the CLI exited before it was ready:\n${out}${err}`)));
      }),
      60_000,
      'the restarted CLI',
    );
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

async function timeLoad({ stores }: LoadedLib, dataDir: string, runs: number): Promise<number> {
  const started = nowUs();
  const store = stores.createSqliteStore({ dataDir });
  const snapshot = await store.load();
  const ms = (nowUs() - started) / 1000;
  await store.close();
  if (snapshot.pauses.length !== runs) throw new Error(`restart bench: loaded ${snapshot.pauses.length} of ${runs} pauses`);
  return ms;
}

export async function runRestartBenchmarks(
  loaded: LoadedLib,
  dataDir: string,
  config: RestartBenchConfig = {},
): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const { runs, starts } = { ...DEFAULT_RESTART_BENCH, ...config };
  const built = nowUs();
  await buildStore(loaded, dataDir, runs);
  const buildMs = (nowUs() - built) / 1000;
  const loadMs = await timeLoad(loaded, dataDir, runs);
  const cliMain = new URL('cli/main.js', loaded.srcUrl).href;
  const times: number[] = [];
  // The build's garbage collected first, so that V8 does not collect it beside the first start.
  collectGarbage();
  for (let i = 0; i < starts; i += 1) times.push(await timeStart(cliMain, dataDir));
  return {
    entries: [entry('restart_recover', median(times), 'ms'), entry('store_recover_load', loadMs, 'ms')],
    notes: [
      `restart_recover: ${runs} paused runs stored by the runtime in ${Math.round(buildMs)} ms; ${starts} CLI starts: ${times.map((t) => Math.round(t)).join(', ')} ms`,
    ],
  };
}
