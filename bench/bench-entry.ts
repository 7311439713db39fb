/** One figure in bench/results.json (README.md, Benchmarks): `ratio` = value / baseline, both measured in the same run. */
export interface BenchEntry {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly baseline?: number;
  readonly ratio?: number;
}

export function entry(name: string, value: number, unit: string, baseline?: number): BenchEntry {
  const round = (n: number): number => Math.round(n * 1000) / 1000;
  return baseline === undefined
    ? { name, value: round(value), unit }
    : { name, value: round(value), unit, baseline: round(baseline), ratio: round(value / baseline) };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
