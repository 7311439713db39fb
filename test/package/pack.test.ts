import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProcess, type StartedProcess } from '../helpers/server-cli.js';
import { post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { errorsOf, launchBrowser, newPage, openPause } from '../dashboard/helpers/browser.js';

/**
 * The package as a user gets it: `npm pack` in a copy of this project (its `prepack` and `prepare`
 * scripts clean and build), the tarball installed into a fresh project from `fixtures/`, that project's
 * strict TypeScript compiled against the published types and run, and the installed bin served.
 * Needs the npm registry (the consumer installs the tarball's dependencies and TypeScript).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures', import.meta.url));
/** Not part of the sources: never copied into the project that is packed. */
const NOT_COPIED = new Set(['node_modules', 'dist', '.git', 'test-results', '.blocks', '.prof', '.stepwise']);

interface Ran {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion, without blocking the test worker the way spawnSync would. */
function run(command: string, args: readonly string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, NO_UPDATE_NOTIFIER: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function expectSuccess(ran: Ran, what: string): void {
  if (ran.status !== 0) throw new Error(`${what} exited with ${ran.status}:\n${ran.stdout}\n${ran.stderr}`);
}

interface PackedFile {
  readonly path: string;
}

describe('the npm package', () => {
  const work = mkdtempSync(join(tmpdir(), 'stepwise-pack-'));
  const project = join(work, 'stepwise');
  const consumer = join(work, 'consumer');
  let tarball = '';
  let files: readonly string[] = [];
  const started: StartedProcess[] = [];

  beforeAll(async () => {
    cpSync(ROOT, project, { recursive: true, filter: (source) => !NOT_COPIED.has(basename(source)) });
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
    mkdirSync(join(work, 'packed'));
    const packed = await run('npm', ['pack', '--json', '--pack-destination', join(work, 'packed')], project);
    expectSuccess(packed, 'npm pack');
    // Lifecycle scripts print before the JSON report.
    const report = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('\n[') + 1)) as [{ filename: string; files: PackedFile[] }];
    tarball = join(work, 'packed', report[0].filename);
    files = report[0].files.map((file) => file.path).sort();
  }, 300_000);

  afterAll(async () => {
    await Promise.all(started.map((server) => server.stop('SIGKILL')));
    // The consumer's node_modules is large: removing it takes a while on a loaded machine.
    await rm(work, { recursive: true, force: true });
  }, 120_000);

  it('should ship the compiled library, the bin, the dashboard, the docs and the license, and nothing else', () => {
    expect(files).toEqual(expect.arrayContaining([
      'LICENSE', 'README.md', 'package.json', 'bin/stepwise.js', 'docs/protocol.md',
      'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/testing/index.js', 'dist/src/testing/index.d.ts',
      'dist/src/cli/main.js', 'src/dashboard/index.html', 'src/dashboard/app.js', 'src/dashboard/style.css',
    ]));
    const allowed = /^(LICENSE|README\.md|package\.json|bin\/stepwise\.js|docs\/[^/]+\.md|dist\/src\/.+\.(js|d\.ts)|src\/dashboard\/[^/]+\.(html|js|css))$/;
    expect(files.filter((file) => !allowed.test(file))).toEqual([]);
  });

  it('should install from the tarball, type-check strict code against both entry points and run it', async () => {
    cpSync(FIXTURES, consumer, { recursive: true });
    const installed = await run(
      'npm',
      ['install', tarball, 'typescript@5.9', '@types/node@20', '@types/express@5', '--no-audit', '--no-fund', '--prefer-offline'],
      consumer,
    );
    expectSuccess(installed, 'npm install');
    // npm 11 skips dependency install scripts unless the user allows them (`--allow-scripts=better-sqlite3`, as
    // the README says), and building better-sqlite3 from source takes minutes here: give the consumer the same
    // version's native build from this repo's install instead of compiling it a second time.
    cpSync(join(ROOT, 'node_modules/better-sqlite3/build'), join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true });
    expectSuccess(await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', '.'], consumer), 'tsc (strict, the published types)');
    // mounted.js is a server, run by the test below.
    const programs = readdirSync(join(consumer, 'out')).filter((file) => file.endsWith('.js') && file !== 'mounted.js');
    expect(programs).toEqual(expect.arrayContaining(['stepping.js', 'marbles.js']));
    for (const program of programs) {
      const ran = await run(process.execPath, [join('out', program)], consumer);
      expectSuccess(ran, `node out/${program}`);
      expect(ran.stdout.trim().split('\n').at(-1)).toBe(`ok ${program.replace(/\.js$/, '')}`);
    }
  }, 300_000);

  it('should run the installed bin: --version, then serve until stopped by its PID', async () => {
    const bin = join(consumer, 'node_modules/.bin/stepwise');
    const version = await run(bin, ['--version'], consumer);
    expectSuccess(version, 'stepwise --version');
    expect(version.stdout.trim()).toBe('0.1.0');

    const server = await startProcess(bin, ['serve', '--port', '0'], { cwd: consumer });
    started.push(server);
    const health = await fetch(`${server.base}/healthz`);
    expect(await health.json()).toEqual({ ok: true });
    // The dashboard's own page, found from the installed module, not the "not built" placeholder.
    const page = await (await fetch(`${server.base}/`)).text();
    expect(page).not.toContain('not built yet');
    expect(page).toContain('app.js');
    expect(await server.stop()).toBe(0);
  }, 60_000);

  it('should mount stepwise under /agent in an app of its own: its route, the socket, a stepped run kept on SQLite across kill -9, the dashboard', async () => {
    const data = join(work, 'consumer-data');
    const first = await startProcess(process.execPath, ['out/mounted.js', data], { cwd: consumer });
    started.push(first);
    expect(await (await fetch(`${first.base}/mine`)).json()).toEqual({ app: 'the consumer' });
    expect(await (await fetch(`${first.base}/agent/healthz`)).json()).toEqual({ ok: true });
    const client = await SemClient.connect(`${first.wsBase}/agent/ws?conv_id=pkg`);
    expect(client.hello.type).toBe('ws.hello');
    expect((await post(first.base, '/agent/chat', { prompt: 'Add 2 and 3', conv_id: 'pkg', overrides: { step_mode: true } })).status).toBe(200);
    const pause = await client.waitFor((frame) => frame.type === 'debugger.pause');
    expect(client.sequenced.map((frame) => frame.type)).toEqual(expect.arrayContaining(['run.start', 'llm.final', 'debugger.pause']));
    await client.close();
    // The pause reached a client, so it is committed: it outlives the process.
    expect(await first.stop('SIGKILL')).toBe(null);

    const second = await startProcess(process.execPath, ['out/mounted.js', data], { cwd: consumer });
    started.push(second);
    expect(second.stdout()).toContain('recovered 1 pause(s)');
    const listed = (await (await fetch(`${second.base}/agent/debug/pauses`)).json()) as { pauses: { pause_id: string }[] };
    expect(listed.pauses.map((each) => each.pause_id)).toEqual([pause.pause_id]);

    const browser = await launchBrowser();
    try {
      const page = await newPage(browser);
      await page.goto(`${second.base}/agent/#/c/pkg`);
      await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
      for (const phase of ['after_inference', 'after_tools']) {
        const card = openPause(page, phase);
        await card.waitFor();
        await card.getByTestId('pause-continue').click();
      }
      const answer = page.locator('[data-testid="assistant-text"][data-state="final"] [data-testid="assistant-body"]').last();
      await expect.poll(() => answer.textContent()).toBe('The sum is 5.');
      expect(errorsOf(page)).toEqual([]);
    } finally {
      await browser.close();
    }
    expect(await second.stop()).toBe(0);
  }, 120_000);
});
