import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

/** The library's public API, as the benchmarks call it. */
export type StepwiseLib = typeof import('../src/index.js');

/** The SQLite store adapter as `serve` opens it (`dataDir`); the package exports it as `createSqliteStore({ path })`. */
export interface StoreLib {
  readonly createSqliteStore: (typeof import('../src/store/sqlite/sqlite-store.js'))['createSqliteStore'];
}

export interface LoadedLib {
  readonly lib: StepwiseLib;
  /** From the same build as `lib`. */
  readonly stores: StoreLib;
  /** URL of the measured build's `src/` directory (ends with `/`), for what runs it as a process. */
  readonly srcUrl: string;
  /** Which build is measured, for the report. */
  readonly source: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));
// In the checkout, so the compiled files resolve rxjs and zod from the project's node_modules, and not
// inside it: a node_modules shared between checkouts (a symlink, or hard links) would let one checkout's
// bench delete and rebuild the build another checkout's bench is running.
const outDir = '.bench-build';

/**
 * Loads the library as it ships: compiled by `tsc` (tsconfig.build.json) into a private directory,
 * so the bench neither depends on nor overwrites `dist/`. Running `src` through tsx instead would
 * measure esbuild's output, whose `keepNames` helper defines a `name` on every closure it creates
 * (about 4 KB more heap per paused run and slower closure creation than the shipped code).
 * Falls back to `src` through tsx, saying so, when the compile fails.
 */
export async function loadStepwiseLib(): Promise<LoadedLib> {
  try {
    // A fresh directory: tsc rewrites a file in place, and a stale file of a deleted source must not load.
    rmSync(join(root, outDir), { recursive: true, force: true });
    await promisify(execFile)(
      process.execPath,
      ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', outDir, '--declaration', 'false', '--sourceMap', 'false'],
      { cwd: root },
    );
    const built = (path: string): string => pathToFileURL(`${root}${outDir}/src/${path}.js`).href;
    return {
      lib: (await import(built('index'))) as StepwiseLib,
      stores: await loadStores(built),
      srcUrl: pathToFileURL(`${root}${outDir}/src/`).href,
      source: `tsc build of src (${outDir})`,
    };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return {
      lib: await import('../src/index.js'),
      stores: await loadStores((path) => `../src/${path}.js`),
      // Processes run what bin/stepwise.js runs.
      srcUrl: pathToFileURL(`${root}dist/src/`).href,
      source: `src through tsx (tsc build failed: ${reason})`,
    };
  }
}

async function loadStores(url: (path: string) => string): Promise<StoreLib> {
  const { createSqliteStore } = (await import(url('store/sqlite/sqlite-store'))) as Pick<StoreLib, 'createSqliteStore'>;
  return { createSqliteStore };
}
