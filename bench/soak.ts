import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { formatReport, runSoak, type SoakOptions } from './soak/index.js';

/**
 * `npm run soak [-- --runs N --kill --redis-restart …]`: the soak of issue 21 against the built CLI
 * (`npm run build` first; it rebuilds dist when src is newer). Prints the table and every violation;
 * exits 1 on any violation, 2 when the soak itself could not run.
 */
const USAGE = `usage: npm run soak -- [--store redis|sqlite] [--runs N] [--kill] [--redis-restart] [--instances N] [--operators N]
  [--observers N] [--lease-ms MS] [--tool-ms MS] [--race-rate R] [--run-end-timeout-ms MS]
  [--timeout-ms MS] [--seed N] [--keep-dir] [--report FILE] [--details N]`;

function parseOptions(argv: readonly string[]): { options: SoakOptions; report?: string; details: number } {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      store: { type: 'string' }, runs: { type: 'string' }, instances: { type: 'string' }, operators: { type: 'string' }, observers: { type: 'string' },
      kill: { type: 'boolean' }, 'redis-restart': { type: 'boolean' }, 'redis-down-ms': { type: 'string' },
      'lease-ms': { type: 'string' }, 'tool-ms': { type: 'string' }, 'race-rate': { type: 'string' },
      'run-end-timeout-ms': { type: 'string' }, 'timeout-ms': { type: 'string' }, seed: { type: 'string' },
      'keep-dir': { type: 'boolean' }, report: { type: 'string' }, details: { type: 'string' }, help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const num = (name: keyof typeof values): number | undefined => {
    const text = values[name];
    if (typeof text !== 'string') return undefined;
    const value = Number(text);
    if (!Number.isFinite(value)) throw new RangeError(`--${name} must be a number, got "${text}"`);
    return value;
  };
  const options: SoakOptions = {
    // Checked with the other options (resolveSoakOptions).
    store: values.store as SoakOptions['store'], runs: num('runs'), instances: num('instances'), operators: num('operators'), observers: num('observers'),
    kill: values.kill, redisRestart: values['redis-restart'], redisDownMs: num('redis-down-ms'), leaseMs: num('lease-ms'),
    toolMs: num('tool-ms'), raceRate: num('race-rate'), runEndTimeoutMs: num('run-end-timeout-ms'), timeoutMs: num('timeout-ms'),
    seed: num('seed'), keepDir: values['keep-dir'],
    log: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`),
  };
  return { options, ...(values.report ? { report: values.report } : {}), details: num('details') ?? 50 };
}

async function main(): Promise<void> {
  const { options, report: reportFile, details } = parseOptions(process.argv.slice(2));
  // Ctrl-C stops the soak early; its processes are still stopped by PID before the report.
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  const report = await runSoak({ ...options, signal: abort.signal });
  console.log(formatReport(report, details));
  if (reportFile) writeFileSync(reportFile, JSON.stringify(report, null, 2));
  process.exitCode = report.violations.length > 0 || report.stopped_early ? 1 : 0;
}

main().catch((error: unknown) => {
  // A bad flag is told with the usage; anything else is a bug of the harness, told with its stack.
  const badFlag = error instanceof RangeError || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
  console.error(badFlag ? `soak: ${(error as Error).message.replace(/^soak: /, '')}\n${USAGE}` : `soak: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 2;
});
