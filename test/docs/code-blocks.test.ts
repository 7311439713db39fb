/**
 * Every code block in README.md and docs/*.md that is meant to run is run here, so the docs cannot rot.
 *
 * The convention (docs/README.md says the same to writers):
 * - ```ts and ```js blocks run. A ts block is type-checked first, strictly (this repository's tsconfig),
 *   with every ts block of the docs in one program (each block is its own module).
 * - A block that calls `describe(`, `it(` or `test(` is a test file: its tests run here, under vitest with
 *   globals (rxjs-marbles' `marbles` from 'rxjs-marbles/jest' works as in test/marbles). Any other block
 *   runs as an ES module (top-level await allowed): a throw or a rejected promise fails it.
 * - `processes=N` after the language (```ts processes=2) marks a program that is run N times, one after another,
 *   each time as a fresh `node` process given the same new temp dir as its first argument, and must exit 0
 *   each time: what one process leaves in a durable store, the next finds (docs/library.md, Durable runs).
 * - ```json blocks must be valid JSON.
 * - `norun` after the language (```ts norun, ```json norun) marks a fragment that is only shown.
 * - Any other language (sh, text, none) is only shown.
 * - `import … from 'stepwise'` and `'stepwise/testing'` resolve to this repository's sources (the aliases in
 *   vitest.config.ts; `paths` for the type check), exactly as a user's import resolves to the package.
 * A block is written to test/docs/.blocks/ (git-ignored) under a name that says where it came from.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { codeBlocks, docFiles, ROOT, type CodeBlock } from './markdown-blocks.js';

const OUT = join(ROOT, 'test/docs/.blocks');

interface WrittenBlock extends CodeBlock {
  readonly file: string;
}

function writeBlocks(blocks: readonly CodeBlock[]): WrittenBlock[] {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  return blocks.map((block) => {
    const file = join(OUT, `${block.where.replace(/[^A-Za-z0-9]+/g, '-')}.${block.lang}`);
    // `export {}` keeps every block its own module, so two blocks may declare the same names.
    writeFileSync(file, `${block.code}\nexport {};\n`);
    return { ...block, file };
  });
}

/**
 * A `processes=N` block as its reader would run it, N times on one directory; `stepwise` resolves to the
 * sources here too (tsx with a tsconfig whose `paths` say so), as in the blocks run in this process.
 */
async function runAsProcesses(block: WrittenBlock): Promise<void> {
  const tsconfig = join(OUT, 'tsconfig.processes.json');
  const paths = { stepwise: ['src/index.ts'], 'stepwise/testing': ['src/testing/index.ts'] };
  writeFileSync(tsconfig, JSON.stringify({ extends: join(ROOT, 'tsconfig.json'), compilerOptions: { baseUrl: ROOT, paths } }));
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-docs-'));
  try {
    for (let run = 1; run <= (block.processes ?? 1); run++) {
      const env = { ...process.env, TSX_TSCONFIG_PATH: tsconfig };
      await promisify(execFile)(process.execPath, ['--import', 'tsx', block.file, dir], { cwd: ROOT, env, timeout: 30_000 }).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`process ${run} of the block at ${block.where} failed:\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Type errors of the ts blocks, as `README.md:42 (line 3): message`. */
function typeErrors(blocks: readonly WrittenBlock[]): string[] {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram(
    blocks.map((block) => block.file),
    {
      ...options,
      noEmit: true,
      // Examples may name things they do not use (an unused `signal` shows where it is).
      noUnusedLocals: false,
      noUnusedParameters: false,
      baseUrl: ROOT,
      paths: { stepwise: ['src/index.ts'], 'stepwise/testing': ['src/testing/index.ts'] },
    },
  );
  const byFile = new Map(blocks.map((block) => [block.file, block]));
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const block = diagnostic.file ? byFile.get(diagnostic.file.fileName) : undefined;
    if (!diagnostic.file || diagnostic.start === undefined) return message;
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    return `${block?.where ?? diagnostic.file.fileName} (line ${line + 1} of the block): ${message}`;
  });
}

const blocks = writeBlocks(docFiles().flatMap(codeBlocks));
const typed = blocks.filter((block) => block.lang === 'ts' && ['module', 'test', 'processes'].includes(block.kind));

describe('the code blocks of README.md and docs/*.md', () => {
  it('should have runnable blocks in the README', () => {
    expect(blocks.filter((block) => block.where.startsWith('README.md') && block.kind === 'test')).not.toEqual([]);
    expect(blocks.filter((block) => block.where.startsWith('README.md') && block.kind === 'module')).not.toEqual([]);
  });

  it('should type-check every ts block, strictly', () => {
    expect(typeErrors(typed)).toEqual([]);
  }, 120_000);

  for (const block of blocks.filter((candidate) => candidate.kind === 'json')) {
    it(`should parse the JSON block at ${block.where}`, () => {
      expect(() => JSON.parse(block.code)).not.toThrow();
    });
  }

  for (const block of blocks.filter((candidate) => candidate.kind === 'module')) {
    it(`should run the block at ${block.where}`, async () => {
      await import(pathToFileURL(block.file).href);
    }, 30_000);
  }

  for (const block of blocks.filter((candidate) => candidate.kind === 'processes')) {
    it(`should run the block at ${block.where} as ${block.processes} processes, one after another, on one directory`, async () => {
      await runAsProcesses(block);
    }, 90_000);
  }
});

// Test blocks define their own describe/it: imported here, at collection, they run as this file's tests,
// each under the name of the place it came from.
for (const block of blocks.filter((candidate) => candidate.kind === 'test')) {
  describe(`the test block at ${block.where}`, async () => {
    await import(pathToFileURL(block.file).href);
  });
}
