import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * A light import (docs/library.md, A light import): `import('stepwise')` loads no provider SDK, MCP,
 * OpenTelemetry, SQLite, Redis or server package until the program uses the one it needs. Proved on the
 * built package in a fresh `node` process (./import-probe/probe.mjs), by which packages were loaded, not
 * by how long it took (that is `npm run bench`'s `import_time`). Needs `npm run build` (`npm test` runs it).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROBE = fileURLToPath(new URL('./import-probe/probe.mjs', import.meta.url));
const builtUrl = (path: string): string => pathToFileURL(`${ROOT}dist/src/${path}`).href;

/** What a program that uses none of them must not load. */
const HEAVY = [
  'openai',
  '@anthropic-ai/sdk',
  '@modelcontextprotocol/sdk',
  '@opentelemetry/api',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/resources',
  'better-sqlite3',
  'ioredis',
  'express',
  'ws',
  '@ag-ui/core',
  '@ag-ui/encoder',
  'ai',
];

/** The packages a fresh process loaded importing `module` and then using what `uses` names. */
async function packagesLoaded(module: string, uses: readonly string[] = []): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [PROBE, builtUrl(module), ...uses], { cwd: ROOT });
  return JSON.parse(stdout) as string[];
}

describe('importing the built package', () => {
  beforeAll(() => {
    if (!existsSync(`${ROOT}dist/src/index.js`)) throw new Error('dist/src/index.js is missing: run `npm run build` first');
  });

  it('should load rxjs and zod and none of the packages only one adapter, provider or the server needs', async () => {
    const loaded = await packagesLoaded('index.js');
    expect(loaded).toEqual(expect.arrayContaining(['rxjs', 'zod']));
    expect(loaded.filter((name) => HEAVY.includes(name))).toEqual([]);
  });

  it('should load a dependency when its adapter, provider or MCP is used, and not the others', async () => {
    const loaded = await packagesLoaded('index.js', ['sqlite', 'openai', 'mcp']);
    expect(loaded).toEqual(expect.arrayContaining(['better-sqlite3', 'openai', '@modelcontextprotocol/sdk']));
    expect(loaded.filter((name) => ['@anthropic-ai/sdk', 'ioredis', 'express', 'ws'].includes(name))).toEqual([]);
  });

  it('should load express and ws when a server is built, and not the adapters it does not use', async () => {
    const loaded = await packagesLoaded('index.js', ['server']);
    expect(loaded).toEqual(expect.arrayContaining(['express', 'ws']));
    expect(loaded.filter((name) => ['better-sqlite3', 'ioredis', 'openai', '@anthropic-ai/sdk'].includes(name))).toEqual([]);
  });
});
