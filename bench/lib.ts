import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

/** The library's public API, as the benchmarks call it. */
export type StepwiseLib = typeof import('../src/index.js');

export interface LoadedLib {
  readonly lib: StepwiseLib;
  /** Which build is measured, for the report. */
  readonly source: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));
// Inside node_modules, so the compiled files resolve rxjs and zod from the project's own node_modules.
const outDir = 'node_modules/.cache/stepwise-bench';

/**
 * Loads the library as it ships: compiled by `tsc` (tsconfig.build.json) into a private directory,
 * so the bench neither depends on nor overwrites `dist/`. Running `src` through tsx instead would
 * measure esbuild's output, whose `keepNames` helper defines a `name` on every closure it creates
 * (about 4 KB more heap per paused run and slower closure creation than the shipped code).
 * Falls back to `src` through tsx, saying so, when the compile fails.
 */
export async function loadStepwiseLib(): Promise<LoadedLib> {
  try {
    await promisify(execFile)(
      process.execPath,
      ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', outDir, '--declaration', 'false', '--sourceMap', 'false'],
      { cwd: root },
    );
    const url = pathToFileURL(`${root}${outDir}/src/index.js`).href;
    return { lib: (await import(url)) as StepwiseLib, source: `tsc build of src (${outDir})` };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return { lib: await import('../src/index.js'), source: `src through tsx (tsc build failed: ${reason})` };
  }
}
