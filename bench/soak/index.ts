import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkDecisions } from './check-decisions.js';
import { checkExecutions } from './check-executions.js';
import { checkObservers, checkRuns, type PlannedRun } from './check-runs.js';
import { collect, pendingEverywhere, pendingPauses, runningConversations, type Collected } from './collect.js';
import { driveFaults, restartDelayMs, summariseFailover, type FaultResults } from './faults.js';
import { readExecutions, writeFixtures } from './fixtures.js';
import { sendRetrying, sleep } from './http.js';
import { follow, type Observer } from './observers.js';
import { createMemoryWatch } from './memory.js';
import { startOperators, type Decision, type Operators } from './operators.js';
import { createRng } from './rng.js';
import { startService, type Service } from './service.js';
import { countedViolations, countPauses, countResumedPastDecisions, latencies, observedTotals } from './summary.js';
import { resolveSoakOptions, type ResolvedSoakOptions, type SoakOptions, type SoakReport, type Violation } from './types.js';

export type { SoakOptions, SoakReport, Violation } from './types.js';
export { formatReport } from './report.js';

/**
 * The soak of issue 21: a real service (redis-server and `stepwise serve --store redis` processes, or
 * one `stepwise serve --store sqlite` process) driven only through its wire protocol (docs/protocol.md).
 * N runs in step mode, operators deciding every pause on random instances, WebSocket observers on
 * non-owners, optional faults; then every promise checked from outside. Every process it started is
 * stopped, by PID, before it returns.
 */
export async function runSoak(options: SoakOptions = {}): Promise<SoakReport> {
  const o = resolveSoakOptions(options);
  const startedAt = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-soak-'));
  const retried: Record<string, number> = {};
  const onRetry = (cause: string): void => void (retried[cause] = (retried[cause] ?? 0) + 1);
  const rng = createRng(o.seed);
  const fixtures = writeFixtures(dir, o.toolMs);
  const observers: (Observer & { stop(): void })[] = [];
  let service: Service | undefined;
  let ops: Operators | undefined;
  try {
    service = await startService({ store: o.store, dir, fixtures, instances: o.instances, leaseMs: o.leaseMs, rng });
    o.log(`soak: ${o.runs} runs on ${o.instances} instance(s) (${o.store} ${service.storeAt}), seed ${o.seed}, dir ${dir}`);
    const memory = createMemoryWatch(service);
    memory.sample('started');
    const { started, refused } = await startRuns(service, planRuns(o), onRetry);
    o.log(`soak: ${started.length} runs started in ${Date.now() - startedAt} ms`);
    observers.push(...pickObserved(started, o.observers).map((run) => follow(service as Service, run.conv_id)));
    const paused = await waitAllPaused(o, service, started, onRetry);
    // Past the instances' hibernation delay (2 s by default): what a paused run costs them once it left memory.
    await sleep(HIBERNATED_AFTER_MS);
    memory.sample('paused');
    o.log(`soak: ${paused} of ${started.length} runs paused after ${Date.now() - startedAt} ms (instances' RSS ${memoryMb(memory)}); operators start`);
    ops = startOperators({ service, operators: o.operators, raceRate: o.raceRate, rng, onRetry, ...signalOf(o) });
    const faults = driveFaults({
      service, kill: o.kill, redisRestart: o.redisRestart, redisDownMs: o.redisDownMs, restartAfterMs: restartDelayMs(o.store, o.leaseMs),
      progress: ops.acknowledgedCount, expected: expectedPauses(started), log: o.log,
      running: () => runningConversations({ service: service as Service, onRetry }),
    });
    const stoppedEarly = await waitForTheEnd(o, service, ops, started, faults, onRetry, startedAt);
    await ops.stop();
    faults.done();
    const faultResults = await faults.finished;
    memory.sample('end');
    o.log(`soak: operators stopped after ${ops.acknowledgedCount()} decisions; reading every log`);
    const inspected = await inspect(o, service, { started, decisions: ops.decisions, observers, toolLog: fixtures.toolLog, onRetry });
    const report: SoakReport = {
      store: o.store,
      runs: started.length,
      instances: o.instances,
      seed: o.seed,
      duration_ms: Date.now() - startedAt,
      pauses_seen: countPauses(ops, inspected.collected),
      decisions_acknowledged: ops.decisions.filter((d) => d.result === 'acknowledged').length,
      races_lost: inspected.racesLost,
      ambiguous_retries: inspected.ambiguous,
      retried,
      observed: observedTotals(observers),
      latency: latencies(ops.decisions),
      ...(faultResults.failover ? { failover: summariseFailover(service, faultResults.failover) } : {}),
      resumed_past_decisions: countResumedPastDecisions(inspected.collected),
      ...(faultResults.redisDownMs !== undefined ? { redis_down_ms: faultResults.redisDownMs } : {}),
      server_stderr_lines: service.stderrLines(),
      memory: memory.summary(service.instances.map((instance) => started.filter((run) => run.instance === instance.index).length)),
      ...countedViolations([...refused, ...inspected.violations]),
      ...(o.keepDir ? { dir } : {}),
      ...(stoppedEarly ? { stopped_early: stoppedEarly } : {}),
    };
    return report;
  } finally {
    await ops?.stop();
    for (const observer of observers) observer.stop();
    await service?.stop();
    if (!o.keepDir) rmSync(dir, { recursive: true, force: true });
  }
}

interface Inspected {
  readonly collected: ReadonlyMap<string, Collected>;
  readonly violations: readonly Violation[];
  readonly racesLost: number;
  readonly ambiguous: number;
}

/** Reads what the service says at the end (pending pauses, every log and audit trail) and checks it all. */
async function inspect(
  o: ResolvedSoakOptions,
  service: Service,
  soak: { started: readonly PlannedRun[]; decisions: readonly Decision[]; observers: readonly Observer[]; toolLog: string; onRetry: (cause: string) => void },
): Promise<Inspected> {
  const { started, decisions, observers, onRetry } = soak;
  const pending = await pendingEverywhere({ service, onRetry });
  const collected = await collect({ service, onRetry }, started.map((run) => run.conv_id));
  await waitForObservers(observers, collected);
  const { executions, unreadable } = readExecutions(soak.toolLog);
  if (unreadable > 0) o.log(`soak: ${unreadable} torn line(s) in the tools' log`);
  const startedOn = new Map(started.map((run) => [run.conv_id, run.instance]));
  const ownedBy = (convId: string): Set<number> =>
    new Set([startedOn.get(convId) ?? -1, ...service.takeovers.filter((t) => t.conv_id === convId).map((t) => t.instance)]);
  const findings = checkDecisions({ decisions, collected, pendingAtEnd: pending, faults: o.kill || o.redisRestart });
  const violations = [
    ...findings.violations,
    ...checkRuns(started, collected, decisions),
    ...checkObservers(observers, collected),
    ...checkExecutions(executions, collected, { ownedBy, pids: service.pids, decided: decisionWindows(decisions) }),
  ];
  return { collected, violations, racesLost: findings.racesLost, ambiguous: findings.ambiguous };
}

/** Round-robin over the instances; every other run asks for tools once (`max_iterations: 1`), the others twice. */
function planRuns(o: ResolvedSoakOptions): PlannedRun[] {
  const width = String(o.runs).length;
  return Array.from({ length: o.runs }, (_, i) => ({ conv_id: `soak-${String(i).padStart(width, '0')}`, instance: i % o.instances, rounds: i % 2 === 0 ? 2 : 1 }));
}

/** Two pauses per round of tools (after_inference, after_tools). */
const expectedPauses = (runs: readonly PlannedRun[]): number => runs.reduce((sum, run) => sum + 2 * run.rounds, 0);

/** POST /chat with step mode on, each on its instance, 20 at a time; a run that could not start is an unexpected reply. */
async function startRuns(service: Service, runs: readonly PlannedRun[], onRetry: (cause: string) => void): Promise<{ started: PlannedRun[]; refused: Violation[] }> {
  const started: PlannedRun[] = [];
  const refused: Violation[] = [];
  const queue = [...runs];
  const worker = async (): Promise<void> => {
    for (let run = queue.shift(); run; run = queue.shift()) {
      const overrides = { step_mode: true, ...(run.rounds === 1 ? { max_iterations: 1 } : {}) };
      const body = { prompt: `soak ${run.conv_id}`, conv_id: run.conv_id, overrides };
      const attempts = await sendRetrying(service, 'POST', '/chat', body, { budgetMs: 30_000, onRetry, first: service.instances[run.instance] as Service['instances'][number] });
      const last = attempts.at(-1);
      // 409 run_in_progress after a lost answer: an earlier attempt started it.
      const ok = last?.status === 200 || (last?.status === 409 && attempts.length > 1 && last.body?.error?.code === 'run_in_progress');
      if (!ok) refused.push({ kind: 'unexpected_reply', conv_id: run.conv_id, detail: `POST /chat answered ${last?.status ?? last?.failure} ${JSON.stringify(last?.body?.error ?? '')}` });
      if (!ok) continue;
      // The instance that answered took the lease: it is the owner.
      service.owners.set(run.conv_id, last?.instance);
      started.push({ ...run, instance: last?.instance ?? run.instance });
    }
  };
  await Promise.all(Array.from({ length: 20 }, worker));
  return { started: started.sort((a, b) => (a.conv_id < b.conv_id ? -1 : 1)), refused };
}

/** Polls GET /debug/pauses until every run has a pause listed (or 60 s and 1 ms a run passed); how many had one. */
async function waitAllPaused(o: ResolvedSoakOptions, service: Service, runs: readonly PlannedRun[], onRetry: (cause: string) => void): Promise<number> {
  const end = Math.min(Date.now() + 60_000 + runs.length, Date.now() + o.timeoutMs);
  for (;;) {
    const asked = Date.now();
    const listed = await pendingPauses({ service, onRetry });
    const convs = new Set((listed ?? []).map((pause) => pause.conv_id));
    const paused = runs.filter((run) => convs.has(run.conv_id)).length;
    if (paused === runs.length || Date.now() > end || o.signal?.aborted) return paused;
    await sleep(listingPause(asked, 250));
  }
}

/**
 * The wait before the next listing of the whole service (every pause, every conversation): at least
 * `least` ms, and twice as long as the last one took, so that listing 100 000 runs takes at most a
 * third of an instance's time.
 */
const listingPause = (askedAt: number, least: number): number => Math.max(least, 2 * (Date.now() - askedAt));

const HIBERNATED_AFTER_MS = 5000;
const memoryMb = (memory: ReturnType<typeof createMemoryWatch>): string => `${memory.summary([]).instances_rss_mb.paused.join(', ')} MB`;

/** Spread evenly over the runs, so both kinds of run and every instance are watched. */
function pickObserved(runs: readonly PlannedRun[], count: number): PlannedRun[] {
  if (count === 0) return [];
  const step = runs.length / count;
  return Array.from({ length: count }, (_, i) => runs[Math.floor(i * step)] as PlannedRun);
}

/**
 * Waits until the service lists no run of the soak as running (and the faults are over), or
 * nothing happened for `runEndTimeoutMs` (a run that never ends shows in the checks), or the
 * soak's time bound. Returns why it stopped early, if it did.
 */
async function waitForTheEnd(
  o: ResolvedSoakOptions,
  service: Service,
  ops: Operators,
  runs: readonly PlannedRun[],
  faults: { finished: Promise<FaultResults> },
  onRetry: (cause: string) => void,
  startedAt: number,
): Promise<string | undefined> {
  let faultsOver = false;
  void faults.finished.then(() => (faultsOver = true));
  // Instances may disagree on `running` (a stale local session): only a new low counts as progress.
  let lowest = runs.length;
  let open = runs.length;
  for (let asked = Date.now(); ; ) {
    await sleep(listingPause(asked, 500));
    if (o.signal?.aborted) return 'aborted';
    if (Date.now() > startedAt + o.timeoutMs) return `the time bound (${o.timeoutMs} ms)`;
    asked = Date.now();
    const running = await runningConversations({ service, onRetry });
    const stillOpen = running ? runs.filter((run) => running.has(run.conv_id)).length : open;
    if (stillOpen < lowest) {
      lowest = stillOpen;
      ops.touch();
      o.log(`soak: ${stillOpen} runs open, ${ops.acknowledgedCount()} decisions`);
    }
    open = stillOpen;
    if (open === 0 && faultsOver) return undefined;
    if (faultsOver && ops.idle() && Date.now() - ops.lastProgress() > o.runEndTimeoutMs) return undefined;
  }
}

/** Gives each observer of an ended run up to 5 s in all to get its last frame. */
async function waitForObservers(observers: readonly Observer[], collected: ReadonlyMap<string, Collected>): Promise<void> {
  const end = Date.now() + 5000;
  const behind = (observer: Observer): boolean => {
    const frames = collected.get(observer.conv_id)?.frames ?? [];
    return !observer.ended && frames.some((frame) => frame.type === 'run.end') && (observer.frames.at(-1)?.seq ?? 0) < (frames.at(-1)?.seq ?? 0);
  };
  while (Date.now() < end && observers.some(behind)) await sleep(100);
}

/** How long after a decision's 200 its call may start running on the instance that runs it, for the harness to tie them. */
const EXECUTION_SLACK_MS = 1000;

/** `<conv_id> <tool_call_id>` -> for each 200 decision of that call's pause, from its first send to a little after its answer. */
function decisionWindows(decisions: readonly Decision[]): Map<string, { from: number; to: number }[]> {
  const windows = new Map<string, { from: number; to: number }[]>();
  for (const decision of decisions) {
    const [first, last] = [decision.attempts[0], decision.attempts.at(-1)];
    if (decision.result !== 'acknowledged' || !first || !last) continue;
    const window = { from: first.at, to: last.at + last.ms + EXECUTION_SLACK_MS };
    for (const call of decision.pause.tool_calls ?? []) {
      const key = `${decision.pause.conv_id} ${call.id}`;
      windows.set(key, [...(windows.get(key) ?? []), window]);
    }
  }
  return windows;
}

const signalOf = (o: { signal?: AbortSignal }): { signal?: AbortSignal } => (o.signal ? { signal: o.signal } : {});
