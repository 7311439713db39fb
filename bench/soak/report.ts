import type { LatencySummary, SoakReport, Violation, ViolationKind } from './types.js';

/** What each violation row counts: the promise broken (docs/protocol.md). */
export const KIND_LABELS: Readonly<Record<ViolationKind, string>> = {
  decision_lost: 'decisions lost (200, then pending, missing from the audit, or the run did otherwise)',
  acknowledged_twice: 'pauses acknowledged twice (two 200s for one pause)',
  resolved_twice: 'pauses resolved twice (two debugger.resume frames)',
  executed_twice: 'non-idempotent calls executed more than once',
  run_not_ended: 'runs not ended (no run.end)',
  run_ended_otherwise: 'runs ended otherwise (status, several run.end)',
  observer_stream: 'observer streams with a gap/duplicate/difference from /hydrate',
  stored_log: 'stored logs with a gap/duplicate (/hydrate)',
  unexpected_reply: 'pauses or runs with an unexpected reply (not 200, 503 retried, a lost race)',
};

export const VIOLATION_KINDS = Object.keys(KIND_LABELS) as ViolationKind[];

/** The report as a two-column table, then each violation on a line of its own (at most `perKind` of each kind). */
export function formatReport(report: SoakReport, perKind = 50): string {
  const rows: [string, string][] = [
    ['runs', `${report.runs} on ${report.instances} instances`],
    ['pauses seen', String(report.pauses_seen)],
    ['decisions acknowledged (200)', String(report.decisions_acknowledged)],
    ['races lost (409 after another 200)', String(report.races_lost)],
    ['409 after an own unanswered attempt', String(report.ambiguous_retries)],
    ['retried', formatCounts(report.retried)],
    ['WebSocket observers', `${report.observed.observers}, ${report.observed.frames} frames, ${report.observed.connections} connections`],
    ...VIOLATION_KINDS.map((kind): [string, string] => [KIND_LABELS[kind], mark(report.counts[kind])]),
    ['continue latency, forwarded', formatLatency(report.latency.forwarded)],
    ['continue latency, where it runs', formatLatency(report.latency.at_owner)],
  ];
  const f = report.failover;
  if (f && report.store === 'sqlite') rows.push(['restart after SIGKILL (same data dir)', `ready after ${f.restarted_after_ms} ms (${f.owned_runs} runs open)`]);
  else if (f) {
    rows.push(['failover after SIGKILL (first / last takeover)', `${ms(f.first_takeover_ms)} / ${ms(f.last_takeover_ms)} (instance ${f.instance}, ${f.owned_runs} runs open there, ${f.takeovers} taken over, restarted after ${f.restarted_after_ms} ms)`]);
  }
  if (report.failover || report.resumed_past_decisions > 0) rows.push(['runs resumed past a decided pause (log frame)', String(report.resumed_past_decisions)]);
  if (report.redis_down_ms !== undefined) rows.push(['redis down', `${report.redis_down_ms} ms`]);
  rows.push(['server stderr lines', String(report.server_stderr_lines)]);
  const { instances_rss_mb: rss, per_paused_run_kb: perRun, harness_rss_mb: harness } = report.memory;
  rows.push(['instances RSS, MB (ready / all paused / end)', `${rss.started.join(', ')} / ${rss.paused.join(', ')} / ${rss.end.join(', ')}`]);
  rows.push(['instance RSS growth per paused run', `${perRun} KB (harness RSS ${harness} MB)`]);
  const width = Math.max(...rows.map(([label]) => label.length));
  const title = `stepwise soak (${report.store}): seed ${report.seed}, ${(report.duration_ms / 1000).toFixed(1)} s${report.stopped_early ? `, STOPPED EARLY: ${report.stopped_early}` : ''}`;
  const table = rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`).join('\n');
  return [title, table, formatViolations(report.violations, perKind), report.dir ? `kept: ${report.dir}` : ''].filter(Boolean).join('\n');
}

function formatViolations(violations: readonly Violation[], perKind: number): string {
  if (violations.length === 0) return 'no violations';
  const lines: string[] = [`${violations.length} violation(s):`];
  for (const kind of VIOLATION_KINDS) {
    const ofKind = violations.filter((violation) => violation.kind === kind);
    for (const v of ofKind.slice(0, perKind)) lines.push(`  ${kind} conv=${v.conv_id ?? '-'} pause=${v.pause_id ?? '-'}: ${v.detail}`);
    if (ofKind.length > perKind) lines.push(`  ${kind}: ${ofKind.length - perKind} more (the report's JSON has all)`);
  }
  return lines.join('\n');
}

const mark = (count: number): string => (count === 0 ? '0' : `${count}  <-- VIOLATION`);
const ms = (value: number | null): string => (value === null ? 'none seen' : `${value} ms`);

function formatLatency(latency: LatencySummary): string {
  return latency.samples === 0 ? 'no samples' : `median ${latency.median_ms.toFixed(1)} ms, p99 ${latency.p99_ms.toFixed(1)} ms (${latency.samples} samples)`;
}

function formatCounts(counts: Readonly<Record<string, number>>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? 'nothing' : entries.map(([cause, count]) => `${cause}: ${count}`).join(', ');
}
