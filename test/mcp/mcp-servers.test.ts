import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectMcpServers, parseMcpConfig, type McpServers } from '../../src/mcp/index.js';
import type { Tool } from '../../src/tools/define-tool.js';
import { until } from '../durable/helpers.js';
import { createToolRegistry } from '../../src/tools/tool-registry.js';
import { startHttpFixture } from '../fixtures/mcp/http-fixture.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'stepwise-mcp-'));

const abortable = () => new AbortController();
const call = (tool: Tool | undefined, args: unknown, signal = abortable().signal): Promise<unknown> =>
  Promise.resolve(tool?.execute(args, { signal, tool_call_id: 'call_1' }));
const byName = (servers: McpServers, name: string): Tool | undefined => servers.tools.find((tool) => tool.name === name);

describe('MCP servers as ordinary tools', { timeout: 30_000 }, () => {
  const log = join(dir, `calls-${randomUUID()}.log`);
  const readLog = async (): Promise<string> => (existsSync(log) ? readFileSync(log, 'utf8') : '');
  // The server is another process: its log file is the only thing to wait on.
  const logSays = (text: string): Promise<string> => until(readLog, (logged) => logged.includes(text));
  let stdio: McpServers;
  let http: { url: string; server: Server };
  const reports: string[] = [];

  beforeAll(async () => {
    http = await startHttpFixture();
    stdio = await connectMcpServers(
      parseMcpConfig({
        mcpServers: {
          fixture: { command: process.execPath, args: [FIXTURE], env: { MCP_LOG: log } },
          missing: { command: join(dir, 'no-such-server') },
          also: { command: process.execPath, args: [FIXTURE] },
        },
      }),
      { takenNames: ['fail'], report: (message) => reports.push(message) },
    );
  });
  afterAll(async () => {
    await stdio?.close();
    http?.server.close();
  });

  it('should list the tools of each server that started, skipping a broken server and a taken name', () => {
    expect(stdio.servers).toEqual([
      { name: 'fixture', tools: ['add', 'lookup', 'wait', 'crash'] },
      // The second copy of the same tools: every name is taken by then.
      { name: 'also', tools: [] },
    ]);
    expect(reports.some((line) => line.startsWith('mcp missing: not started:'))).toBe(true);
    expect(reports).toContain('mcp fixture: tool fail skipped: another tool has that name');
    expect(reports).toContain('mcp also: tool add skipped: another tool has that name');
  });

  it('should advertise the input schema and validate against it', () => {
    const add = byName(stdio, 'add');
    expect(add?.description).toBe('Adds two numbers');
    expect(add?.parameters).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] });
    expect(add?.validate({ a: 1, b: 2 })).toEqual({ ok: true, value: { a: 1, b: 2 } });
    const invalid = add?.validate({ a: 1, b: 'two' });
    expect(invalid?.ok).toBe(false);
    expect(invalid?.ok === false && invalid.issues.join()).toMatch(/^b: /);
  });

  it('should call tools over stdio: text, structured content, read-only tools idempotent', async () => {
    expect(await call(byName(stdio, 'add'), { a: 2, b: 3 })).toBe('5');
    expect(byName(stdio, 'add')?.idempotent).toBe(true);
    expect(await call(byName(stdio, 'lookup'), { key: 'oslo' })).toEqual({ key: 'oslo', value: 'OSLO' });
    expect(byName(stdio, 'lookup')?.idempotent).toBeUndefined();
  });

  it('should turn an isError result into a failure carrying its text', async () => {
    const servers = await connectMcpServers({ mcpServers: { fixture: { command: process.execPath, args: [FIXTURE] } } });
    try {
      await expect(call(byName(servers, 'fail'), {})).rejects.toThrow('the fixture failed on purpose');
    } finally {
      await servers.close();
    }
  });

  it('should send the cancellation to the server when the call is aborted', async () => {
    const controller = abortable();
    const pending = call(byName(stdio, 'wait'), { label: 'first' }, controller.signal);
    // The request must be in flight at the server before the abort can be sent for it.
    await logSays('started first');
    controller.abort(new Error('tool timed out'));
    await expect(pending).rejects.toThrow();
    await logSays('cancelled first');
    expect(readFileSync(log, 'utf8')).toBe('started first\ncancelled first\n');
  });

  it('should withdraw the tools of a server that dies mid-call, and say so', async () => {
    const said: string[] = [];
    const servers = await connectMcpServers({ mcpServers: { doomed: { command: process.execPath, args: [FIXTURE] } } }, { report: (line) => said.push(line) });
    const registry = createToolRegistry(servers.tools);
    const downs: unknown[] = [];
    servers.down$.subscribe((down) => downs.push(down));
    try {
      expect(registry.specs().map((spec) => spec.name)).toContain('add');
      await expect(call(byName(servers, 'crash'), {})).rejects.toThrow();
      await until(async () => downs.length, (count) => count === 1);
      expect(downs).toEqual([{ server: 'doomed', tools: ['add', 'lookup', 'fail', 'wait', 'crash'], message: expect.stringContaining('MCP server doomed stopped') }]);
      expect(said).toEqual(['mcp doomed: stopped; its tools are withdrawn']);
      expect(registry.specs()).toEqual([]);
      expect(byName(servers, 'add')?.available?.()).toBe(false);
      await expect(call(byName(servers, 'add'), { a: 1, b: 1 })).rejects.toThrow('MCP server doomed stopped: its tools (add, lookup, fail, wait, crash) are withdrawn');
    } finally {
      await servers.close();
    }
  });

  it('should call tools over streamable HTTP', async () => {
    const servers = await connectMcpServers(parseMcpConfig({ mcpServers: { remote: { url: http.url } } }));
    try {
      expect(servers.servers).toEqual([{ name: 'remote', tools: ['add', 'lookup', 'fail', 'wait', 'crash'] }]);
      expect(await call(byName(servers, 'add'), { a: 40, b: 2 })).toBe('42');
    } finally {
      await servers.close();
    }
  });

  it('should refuse a config that is not the common format, naming the field', () => {
    expect(() => parseMcpConfig({ servers: {} })).toThrow(/^mcpServers: /);
    expect(() => parseMcpConfig({ mcpServers: { x: { args: ['a'] } } })).toThrow('mcpServers.x: expected {command, args?, env?, cwd?} or {url, headers?}');
    expect(() => parseMcpConfig({ mcpServers: { 'bad name!': { command: 'x' } } })).toThrow(/^mcpServers\.bad name!: /);
  });
});
