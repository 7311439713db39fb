import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from '../helpers/server-cli.js';
import type { Frame } from '../helpers/server-ws-client.js';
import { writeHostileFiles } from '../helpers/hostile-files.js';
import type { HostileResponse } from '../helpers/hostile-model.js';
import { createRng, fuzzSeed } from '../helpers/seeded-rng.js';
import { brief, checked, FuzzClient, FuzzReport, startServe, STDERR_FAILURES, type ServeProcess } from '../helpers/hostile-driver.js';
import { driveRun, fuzzConversation, startRun, type ConvPlan, type ConvResult, type RunRecord } from '../helpers/hostile-runs.js';
import { checkConversation, checkDecisionTrail, checkGapless, checkSameFrames, hydrateAll } from '../helpers/hostile-checks.js';

/**
 * SPEC §18 (docs/protocol.md, Untrusted input): the model is untrusted input. A scripted engine plays a seeded
 * hostile script (arguments nested 50 000 levels deep, megabytes of text, lone surrogates, `__proto__` keys,
 * colliding ids, thousands of calls, unknown and huge tool names, failures) through `stepwise serve --store sqlite`,
 * while every pause is resolved in every way an operator can (continue, deny, edit, answer, the deadline, cancel,
 * step mode off) and in ways the server must refuse. The process never exits, every run ends, every stream is
 * gapless, every acknowledged decision is honoured, and after a kill -9 the server starts again on its data dir.
 *
 * Replay a failure with `STEPWISE_FUZZ_SEED=<seed> npx vitest run test/server/hostile-model.test.ts`; for a post-mortem,
 * `STEPWISE_FUZZ_KEEP=1` keeps the data dir and `STEPWISE_FUZZ_DUMP=<dir>` writes each socket's frames there.
 */
const SEED = fuzzSeed();
const CONVERSATIONS = 6;

describe(`a hostile model on SQLite (seed ${SEED})`, () => {
  const rng = createRng(SEED);
  let dir: string;
  let responses: readonly HostileResponse[];
  let args: string[];
  let report: FuzzReport;
  let server: ServeProcess | undefined;
  const servers: ServeProcess[] = [];
  let results: ConvResult[] = [];

  beforeAll(() => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'stepwise-hostile-model-'));
    const files = writeHostileFiles(dir, rng, { responses: 34 });
    responses = files.responses;
    report = new FuzzReport(SEED, responses);
    args = [
      ...['--port', '0', '--debug', '--store', 'sqlite', '--data-dir', join(dir, 'data'), '--script', files.script, '--tools', files.tools],
      ...['--pause-timeout-ms', String(rng.pick([300, 500, 800])), '--pause-timeout-action', rng.pick(['continue', 'continue', 'deny', 'abort'])],
      ...['--hibernate-after-ms', String(rng.pick([150, 400, 2000])), '--max-parallel-tools', String(rng.int(1, 8)), '--tool-timeout-ms', '3000'],
    ];
    console.log(`hostile-model (sqlite): seed ${SEED} (STEPWISE_FUZZ_SEED=${SEED} replays it); serve ${args.slice(11).join(' ')}`);
  }, 120_000);

  afterAll(async () => {
    for (const result of results) await result.ws.close();
    for (const started of servers) await started.stop('SIGKILL');
    if (process.env['STEPWISE_FUZZ_KEEP']) console.log(`hostile-model (sqlite): kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<ServeProcess> => {
    const started = await startServe(args);
    servers.push(started);
    return started;
  };

  /** The process is up, answers /healthz, and wrote nothing to stderr that says something failed. */
  const expectHealthy = async (target: ServeProcess): Promise<void> => {
    if (!target.alive()) report.fail('process', `exited (${target.exit()}); stderr:\n${target.stderr().slice(-4000)}`);
    else await checked(report, 'healthz', target.base, 'GET', '/healthz', undefined, [200]);
    if (STDERR_FAILURES.test(target.stderr())) report.fail('stderr', target.stderr().slice(0, 4000));
  };

  const expectNoViolations = (): void => {
    console.log(`hostile-model (sqlite) seed ${SEED}: ${report.summary()}`);
    expect(report.violations, `seed ${SEED}: ${report.violations.length} violations (STEPWISE_FUZZ_SEED=${SEED} replays them)`).toEqual([]);
  };

  it('should end every run, keep every stream gapless and every acknowledged decision, and stay up', async () => {
    server = await start();
    const live = server;
    const plans: ConvPlan[] = Array.from({ length: CONVERSATIONS }, (_, i) => ({
      convId: `hostile-${i}`,
      chatBase: live.base,
      wsBase: live.wsBase,
      decideBases: [live.base],
      // Some conversations stop before the script's end, so runs are left to start before the kill.
      runs: rng.int(3, 12),
      rng: rng.fork(),
    }));
    results = await Promise.all(plans.map((plan) => fuzzConversation(report, plan)));

    for (const result of results) {
      checkConversation(report, result);
      // For a failure's post-mortem: every frame each conversation's socket got.
      if (process.env['STEPWISE_FUZZ_DUMP']) writeFileSync(join(process.env['STEPWISE_FUZZ_DUMP'], `${result.plan.convId}.json`), JSON.stringify(result.ws.frames));
      const stored = await hydrateAll(report, live.base, result.plan.convId);
      if (stored) {
        checkGapless(report, `${result.plan.convId} /hydrate`, stored);
        checkSameFrames(report, `${result.plan.convId} /hydrate`, result.ws.frames, stored);
      }
      await checkDecisionTrail(report, live.base, result);
      const conv = await checked(report, `${result.plan.convId} read`, live.base, 'GET', `/conversations/${result.plan.convId}`, undefined, [200]);
      if (conv?.body.running !== false) report.fail(result.plan.convId, `running is ${brief(conv?.body.running)} after every run ended`);
    }
    await expectHealthy(live);
    expectNoViolations();
  }, 120_000);

  it('should start again on its data dir after a kill -9 in the middle of runs, serve every conversation, and end the runs it resumed', async () => {
    const first = server as ServeProcess;
    if (!first.alive()) throw new Error(`seed ${SEED}: the server is not running (see the test before)`);
    // Runs in flight at the kill: each started in step mode and left at its first pause (or its end).
    const inFlight: { result: ConvResult; run: RunRecord }[] = [];
    for (const result of results) {
      if (!rng.chance(0.7)) continue;
      const from = result.ws.frames.length;
      const run = await startRun(report, result.plan, { stepMode: true, maxIterations: 3 });
      if (!run) continue;
      result.runs.push(run);
      const reached = await result.ws
        .waitFor((f) => (f.type === 'debugger.pause' || f.type === 'run.end') && (f['metadata']?.inference_id ?? f['inference_id']) === run.inferenceId, from, 20_000)
        .catch(() => report.fail(`${result.plan.convId} run ${run.inferenceId}`, 'neither a pause nor an end within 20 s before the kill'));
      // A run that ended already (a text, an error, the script's end) is not in flight.
      if (reached?.type !== 'run.end') inFlight.push({ result, run });
    }
    const before = new Map<string, any>();
    for (const result of results) before.set(result.plan.convId, (await checked(report, 'read before kill', first.base, 'GET', `/conversations/${result.plan.convId}`, undefined, [200]))?.body);
    // Closed first: a socket the kill closes is a socket the server closed (1006).
    for (const result of results) await result.ws.close();
    await first.stop('SIGKILL');

    const second = await start();
    const list = await checked(report, 'conversations after restart', second.base, 'GET', '/conversations', undefined, [200]);
    const listed = new Set(((list?.body.conversations ?? []) as { conv_id: string }[]).map((c) => c.conv_id));
    for (const result of results) {
      const conv = result.plan.convId;
      if (!listed.has(conv)) report.fail(conv, 'not listed by GET /conversations after the restart');
      const after = await checked(report, `${conv} read after restart`, second.base, 'GET', `/conversations/${conv}`, undefined, [200]);
      const earlier = before.get(conv);
      // Turns of runs that had ended before the kill are as they were.
      const settled = (earlier?.turns ?? []).filter((turn: { id: string }) => !inFlight.some((f) => f.result === result && f.run.turnId === turn.id));
      for (const turn of settled) {
        const now = (after?.body.turns ?? []).find((t: { id: string }) => t.id === turn.id);
        if (JSON.stringify(now) !== JSON.stringify(turn)) report.fail(conv, `turn ${turn.id} changed across the restart: ${brief(now, 200)} was ${brief(turn, 200)}`);
      }
    }

    // The runs left in flight go on: each ends, and its stream goes on from the last seq seen, gapless.
    await Promise.all(
      inFlight.map(async ({ result, run }) => {
        const conv = result.plan.convId;
        const seen = result.ws.frames;
        const ws = await FuzzClient.connect(report, second.wsBase, conv, seen.at(-1)?.seq ?? 0);
        const plan: ConvPlan = { ...result.plan, chatBase: second.base, wsBase: second.wsBase, decideBases: [second.base] };
        const resumed: ConvResult = { ...result, plan, ws, acks: [], cancelled: new Set() };
        // Its deadline may have ended it before the kill; else it goes on (or resolves at start, as `timeout`).
        if (!seen.some((f) => f.type === 'run.end' && f['inference_id'] === run.inferenceId)) await driveRun(report, plan, ws, run, resumed, 0);
        const all: Frame[] = [...seen, ...ws.frames];
        checkGapless(report, `${conv} stream across the restart`, all);
        checkConversation(report, { ...resumed, ws }, all);
        await ws.close();
      }),
    );
    for (const result of results) {
      const conv = result.plan.convId;
      const stored = await hydrateAll(report, second.base, conv);
      if (!stored) continue;
      checkGapless(report, `${conv} /hydrate after restart`, stored);
      // A frame a client saw before the kill was committed: the store has it under the same seq.
      checkSameFrames(report, `${conv} /hydrate after restart`, result.ws.frames, stored);
      const now = await checked(report, `${conv} read`, second.base, 'GET', `/conversations/${conv}`, undefined, [200]);
      if (now?.body.running !== false) report.fail(conv, `running is ${brief(now?.body.running)} after its runs ended`);
    }
    await expectHealthy(second);
    if (STDERR_FAILURES.test(first.stderr())) report.fail('stderr before the kill', first.stderr().slice(0, 4000));
    expectNoViolations();
  }, 90_000);
});
