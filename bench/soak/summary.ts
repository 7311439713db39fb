import { median, percentile } from '../bench-entry.js';
import type { Observer } from './observers.js';
import type { Collected } from './collect.js';
import type { Decision, Operators } from './operators.js';
import { VIOLATION_KINDS } from './report.js';
import type { LatencySummary, SoakReport, Violation } from './types.js';

/** The report's totals, from what the soak recorded. */
export function countedViolations(violations: readonly Violation[]): Pick<SoakReport, 'counts' | 'violations'> {
  const counts = Object.fromEntries(VIOLATION_KINDS.map((kind) => [kind, violations.filter((v) => v.kind === kind).length]));
  return { counts: counts as SoakReport['counts'], violations };
}

export function observedTotals(observers: readonly Observer[]): SoakReport['observed'] {
  return {
    observers: observers.length,
    frames: observers.reduce((sum, observer) => sum + observer.frames.length, 0),
    connections: observers.reduce((sum, observer) => sum + observer.connections.length, 0),
  };
}

export function countPauses(ops: Operators, collected: ReadonlyMap<string, Collected>): number {
  const ids = new Set(ops.pauses.keys());
  for (const { frames } of collected.values()) for (const frame of frames ?? []) if (frame.type === 'debugger.pause') ids.add(frame.id);
  return ids.size;
}

/** Runs whose `log` frame says they resumed past a pause decided before their owner stopped (docs/protocol.md, Durability). */
export function countResumedPastDecisions(collected: ReadonlyMap<string, Collected>): number {
  let count = 0;
  for (const { frames } of collected.values()) for (const frame of frames ?? []) if (frame.type === 'log' && / past its pause \S+, as decided$/.test(String(frame.message))) count += 1;
  return count;
}

/** First-attempt 200s, split by whether they were sent to the run's owner or forwarded by another instance. */
export function latencies(decisions: readonly Decision[]): SoakReport['latency'] {
  const firstTry = decisions.filter((d) => d.result === 'acknowledged' && d.attempts.length === 1 && d.ownerAtSend !== undefined);
  const summary = (samples: number[]): LatencySummary => ({ samples: samples.length, median_ms: round(median(samples)), p99_ms: round(percentile(samples, 99)) });
  return {
    forwarded: summary(firstTry.filter((d) => d.attempts[0]?.instance !== d.ownerAtSend).map((d) => d.attempts[0]?.ms ?? 0)),
    at_owner: summary(firstTry.filter((d) => d.attempts[0]?.instance === d.ownerAtSend).map((d) => d.attempts[0]?.ms ?? 0)),
  };
}

const round = (value: number): number => Math.round(value * 10) / 10;
