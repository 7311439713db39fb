import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parseTokens } from '../../src/server/auth.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { until } from '../durable/helpers.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { createTestTools, get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

type Listed = { name: string; description: string; parameters: Record<string, unknown>; source: string };
const names = (tools: Listed[]): string[] => tools.map((tool) => tool.name);

describe('GET /tools', () => {
  let t: TestServer;
  let up = true;
  beforeAll(async () => {
    const remote = defineTool({
      name: 'lookup',
      description: 'Looks a key up.',
      parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
      available: () => up,
      execute: ({ key }: { key: string }) => ({ key }),
    });
    const local = defineTool({ name: 'shout', description: 'Shouts.', parameters: z.object({ text: z.string() }), execute: ({ text }) => text.toUpperCase() });
    t = await startTestServer({
      tokens: parseTokens('alice:tok-tools'),
      toolSources: new Map([
        ['lookup', 'mcp:fixture'],
        ['shout', 'tools-file'],
      ]),
      runtime: { tools: [...createTestTools(), local, remote] },
    });
  });
  afterAll(() => t.close());

  it('should list every tool the server offers with its schema and source, and drop a withdrawn one', async () => {
    const reply = await get(t.base, '/tools', 'tok-tools');
    expect(reply.status).toBe(200);
    expect(reply.body.tools).toEqual([
      { name: 'add', description: 'Adds two numbers.', parameters: expect.objectContaining({ type: 'object', required: ['a', 'b'] }), source: 'built-in' },
      { name: 'echo', description: 'Echoes its text.', parameters: expect.objectContaining({ type: 'object' }), source: 'built-in' },
      { name: 'shout', description: 'Shouts.', parameters: expect.objectContaining({ properties: { text: { type: 'string' } } }), source: 'tools-file' },
      { name: 'lookup', description: 'Looks a key up.', parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }, source: 'mcp:fixture' },
    ]);
    up = false;
    expect(names((await get(t.base, '/tools', 'tok-tools')).body.tools)).toEqual(['add', 'echo', 'shout']);
    up = true;
    expect(names((await get(t.base, '/tools', 'tok-tools')).body.tools)).toContain('lookup');
  });

  it('should need the caller’s token and answer GET only', async () => {
    expect((await get(t.base, '/tools')).status).toBe(401);
    expect((await get(t.base, '/tools', 'wrong')).status).toBe(401);
    const wrongMethod = await post(t.base, '/tools', {}, 'tok-tools');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('GET /tools through the CLI with --tools and --mcp', { timeout: 60_000 }, () => {
  beforeAll(() => ensureBuilt(), 120_000);
  let cli: CliServer | undefined;
  afterAll(async () => {
    await cli?.stop('SIGKILL');
  });

  it('should name the tools file and the MCP server as sources, and stop listing MCP tools once their server died', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-tools-route-'));
    const mcpFile = join(dir, 'mcp.json');
    const server = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
    writeFileSync(mcpFile, JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [server] } } }));
    const scriptFile = join(dir, 'script.json');
    writeFileSync(scriptFile, JSON.stringify({ responses: [{ tool_calls: [{ id: 'x1', name: 'crash', arguments: {} }] }, { text: 'gone' }] }));
    const toolsFile = fileURLToPath(new URL('../dashboard/fixtures/tools.mjs', import.meta.url));
    cli = await startCli(['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--tools', toolsFile, '--mcp', mcpFile]);

    const listed = (await get(cli.base, '/tools')).body.tools as Listed[];
    const sourceOf = Object.fromEntries(listed.map((tool) => [tool.name, tool.source]));
    // The tools file's `add` came first; the MCP server's `add` was skipped (documented clash rule).
    expect(sourceOf).toMatchObject({ echo: 'tools-file', add: 'tools-file', lookup: 'mcp:fixture', wait: 'mcp:fixture', crash: 'mcp:fixture' });
    expect(listed.find((tool) => tool.name === 'lookup')?.parameters).toMatchObject({ type: 'object', properties: { key: { type: 'string' } } });

    // The model calls `crash`: the MCP server exits, and its tools are withdrawn.
    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=crash-it`);
    expect((await post(cli.base, '/chat', { conv_id: 'crash-it', prompt: 'crash it' })).status).toBe(200);
    await ws.next('run.end');
    await ws.close();
    const after = await until(
      async () => names((await get(cli!.base, '/tools')).body.tools),
      (current) => !current.includes('lookup'),
    );
    expect(after.sort()).toEqual(['add', 'echo']);
  });
});
