import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '../durable/helpers.js';
import { ensureBuilt, runCli, startCli, type CliServer } from '../helpers/server-cli.js';
import { post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'stepwise-mcp-cli-'));
const mcpLog = join(dir, 'calls.log');
const mcpFile = join(dir, 'mcp.json');
writeFileSync(
  mcpFile,
  JSON.stringify({
    mcpServers: {
      fixture: { command: process.execPath, args: [FIXTURE], env: { MCP_LOG: mcpLog } },
      broken: { command: join(dir, 'no-such-server') },
    },
  }),
);
const scriptFile = join(dir, 'script.json');
writeFileSync(
  scriptFile,
  JSON.stringify({
    responses: [
      { tool_calls: [{ id: 'm1', name: 'add', arguments: { a: 2, b: 3 } }] },
      { text: 'It is 5.' },
      { tool_calls: [{ id: 'm2', name: 'wait', arguments: { label: 'slow' } }] },
      { text: 'It took too long.' },
      { tool_calls: [{ id: 'm3', name: 'crash', arguments: {} }] },
      { text: 'The server is gone.' },
    ],
  }),
);

/** One OTLP/HTTP JSON span, as much of it as the assertions read. */
interface OtlpSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean } }[];
}

/** A stand-in OpenTelemetry collector: keeps every span POSTed to /v1/traces. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; server: Server }> {
  const spans: OtlpSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const payload = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const resource of payload.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

const attribute = (span: OtlpSpan | undefined, key: string): unknown => {
  const value = span?.attributes.find((entry) => entry.key === key)?.value;
  return value && (value.stringValue ?? value.intValue ?? value.boolValue);
};

describe('serve --mcp, with traces over OTLP', { timeout: 60_000 }, () => {
  beforeAll(() => ensureBuilt(), 120_000);
  let cli: CliServer | undefined;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  afterAll(async () => {
    await cli?.stop('SIGKILL');
    collector?.server.close();
  });

  it('should offer MCP tools like any other, pause on them, time them out with a cancellation, and trace it all', async () => {
    collector = await startCollector();
    cli = await startCli(
      ['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--mcp', mcpFile, '--debug', '--tool-timeout-ms', '400'],
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'stepwise-test' },
    );
    expect(cli.stdout()).toContain('mcp: fixture (add, lookup, fail, wait, crash)');
    expect(cli.stdout()).toContain(`traces: exported over OTLP to ${collector.url}`);

    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=mcp-1`);
    expect((await post(cli.base, '/chat', { prompt: 'add', conv_id: 'mcp-1', overrides: { step_mode: true } })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    expect(pause.extra.pending_tools).toEqual(['add']);
    expect((await post(cli.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    expect(await ws.next('tool.result')).toMatchObject({ id: 'm1', result: '5' });
    await post(cli.base, '/debug/step/disable', { conv_id: 'mcp-1' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });

    // The second run's MCP tool hangs: the per-call timeout aborts it and the server hears of it.
    expect((await post(cli.base, '/chat', { prompt: 'wait', conv_id: 'mcp-1' })).status).toBe(200);
    expect((await ws.next('tool.result')).error).toMatch(/timed out/);
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });

    // The third run's MCP server dies mid-call: the run hears why, gets an error result and goes on.
    expect((await post(cli.base, '/chat', { prompt: 'crash', conv_id: 'mcp-1' })).status).toBe(200);
    const notice = await ws.next('log');
    expect(notice).toMatchObject({ level: 'warn', message: 'MCP server fixture stopped: its tools (add, lookup, fail, wait, crash) are withdrawn' });
    expect((await ws.next('tool.result')).error).toContain('MCP server fixture stopped');
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
    const readLog = async (): Promise<string> => (existsSync(mcpLog) ? readFileSync(mcpLog, 'utf8') : '');
    expect(await until(readLog, (logged) => logged.includes('cancelled'))).toBe('started slow\ncancelled slow\n');

    // SIGTERM flushes the batched spans and ends the MCP server process.
    expect(await cli.stop('SIGTERM')).toBe(0);
    const names = collector.spans.map((span) => span.name);
    expect(names.filter((name) => name === 'invoke_agent stepwise')).toHaveLength(3);
    expect(names).toEqual(expect.arrayContaining(['chat scripted', 'execute_tool add', 'execute_tool wait', 'stepwise.pause after_inference']));
    const paused = collector.spans.find((span) => span.name === 'stepwise.pause after_inference');
    expect(attribute(paused, 'stepwise.pause.by')).toBe('local');
    expect(attribute(paused, 'stepwise.pause.reason')).toBe('continued');
    const add = collector.spans.find((span) => span.name === 'execute_tool add');
    expect(attribute(add, 'gen_ai.tool.call.id')).toBe('m1');
    const run = collector.spans.find((span) => span.spanId === add?.parentSpanId);
    expect(run?.name).toBe('invoke_agent stepwise');
    expect(attribute(run, 'gen_ai.conversation.id')).toBe('mcp-1');
  });

  it('should refuse an --mcp file that is not the common format, naming the file', () => {
    const bad = join(dir, 'bad-mcp.json');
    writeFileSync(bad, JSON.stringify({ servers: [] }));
    const { status, output } = runCli(['serve', '--store', 'memory', '--port', '0', '--mcp', bad]);
    expect(status).toBe(1);
    expect(output).toContain(`--mcp ${bad}: mcpServers: `);
    expect(existsSync(join(dir, 'no-such-server'))).toBe(false);
  });
});
