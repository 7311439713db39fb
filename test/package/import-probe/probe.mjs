// `node probe.mjs MODULE_URL [USE…]`: imports MODULE_URL in this fresh process, calls the uses named
// (see USES), and prints the npm packages that were loaded as a JSON array. Both ways a package can
// arrive are seen: an `import` through the resolve hook, a `require` (createRequire) through the
// CommonJS cache. Run by test/package/light-import.test.ts.
import { createRequire, register } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';

const USES = {
  sqlite: async (pkg) => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-probe-'));
    await pkg.createSqliteStore({ path: dir }).close();
    rmSync(dir, { recursive: true, force: true });
  },
  openai: (pkg) => pkg.createOpenAIChatEngine({ apiKey: 'not-used' }),
  mcp: (pkg) => pkg.connectMcpServers({ mcpServers: {} }, { report: () => undefined }),
  server: async (pkg) => {
    const stepwise = pkg.createStepwise({ engine: pkg.createScriptedEngine({ responses: [] }) });
    await pkg.createStepwiseServer(stepwise).close();
    stepwise.dispose();
  },
};

const { port1, port2 } = new MessageChannel();
const urls = [];
port1.on('message', (message) => message.url && urls.push(message.url));
register(new URL('./hooks.mjs', import.meta.url), { data: { port: port2 }, transferList: [port2] });

const [moduleUrl, ...uses] = process.argv.slice(2);
const pkg = await import(moduleUrl);
for (const use of uses) await USES[use](pkg);

// Messages on one port arrive in order: once the flush is answered, every resolution is in.
await new Promise((done) => {
  port1.on('message', (message) => message.flushed && done());
  port1.postMessage('flush');
});
port1.close();

const required = Object.keys(createRequire(import.meta.url).cache);
const packageOf = (where) => /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(decodeURIComponent(where))?.[1];
const packages = new Set([...urls, ...required].map(packageOf).filter(Boolean));
process.stdout.write(JSON.stringify([...packages].sort()));
