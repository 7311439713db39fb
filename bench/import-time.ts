import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { entry, median, type BenchEntry } from './bench-entry.js';

/**
 * `import_time` (README.md, Benchmarks; docs/library.md, A light import): ms for a fresh `node` process
 * to `import()` the package's built main entry, median of `samples` processes. Baseline: the same kind of
 * fresh process importing only `rxjs` and `zod`, the two dependencies the loop cannot do without.
 *
 * The clock runs inside the child, around the `import()` alone: Node's own start (about 40 ms here, the
 * same for both) is not the package's to shrink and would only flatten the ratio. Processes alternate
 * package, baseline, package, …, so a busy moment of the shared machine falls on both.
 */

export interface ImportTimeConfig {
  /** URL of the built `index.js` to import (the bench's own tsc build, or `dist/src/index.js`). */
  readonly entryUrl: string;
  /** Where bare specifiers (`rxjs`, `zod`) resolve from: the project root. */
  readonly cwd: string;
  /** Processes per side. Default 5. */
  readonly samples?: number;
}

const DEFAULT_SAMPLES = 5;

/** A child that imports each specifier in order and prints the ms it took, nothing else. */
function timingScript(specifiers: readonly string[]): string {
  const imports = specifiers.map((specifier) => `await import(${JSON.stringify(specifier)});`).join(' ');
  return `const t0 = performance.now(); ${imports} process.stdout.write(String(performance.now() - t0));`;
}

async function timeImport(specifiers: readonly string[], cwd: string): Promise<number> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', timingScript(specifiers)], { cwd });
  const ms = Number(stdout.trim());
  if (!Number.isFinite(ms)) throw new Error(`import_time: the child printed ${JSON.stringify(stdout)}`);
  return ms;
}

export async function measureImportTime(config: ImportTimeConfig): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const samples = config.samples ?? DEFAULT_SAMPLES;
  const packageMs: number[] = [];
  const baselineMs: number[] = [];
  for (let i = 0; i < samples; i++) {
    packageMs.push(await timeImport([config.entryUrl], config.cwd));
    baselineMs.push(await timeImport(['rxjs', 'zod'], config.cwd));
  }
  const round = (values: readonly number[]): string => values.map((ms) => ms.toFixed(0)).join(' / ');
  return {
    entries: [entry('import_time', median(packageMs), 'ms', median(baselineMs))],
    notes: [`import_time: ${fileURLToPath(config.entryUrl)}: ${round(packageMs)} ms; rxjs + zod: ${round(baselineMs)} ms`],
  };
}
