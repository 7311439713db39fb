import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { get, post } from '../helpers/server-harness.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';

// Issue 13: MCP tools are paused on like any other, breakpoints included. Through the real CLI: a tools
// file's tools (`echo`, `add`) and a real MCP server over stdio (`lookup`, `wait`, `crash`, …; its own
// `add` is skipped, the server's tool of that name came first).
const MCP_SERVER = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const TOOLS_FILE = fileURLToPath(new URL('../dashboard/fixtures/tools.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'stepwise-mcp-breakpoints-'));
const mcpFile = join(dir, 'mcp.json');
writeFileSync(mcpFile, JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [MCP_SERVER] } } }));
const scriptFile = join(dir, 'script.json');
writeFileSync(
  scriptFile,
  JSON.stringify({
    responses: [
      // Run 1: a tools-file call, then an MCP call, then the answer.
      { tool_calls: [{ id: 'e1', name: 'echo', arguments: { message: 'hi' } }] },
      { tool_calls: [{ id: 'k1', name: 'lookup', arguments: { key: 'abc' } }] },
      { text: 'ABC it is.' },
      // Run 2: the MCP server dies mid-call.
      { tool_calls: [{ id: 'c1', name: 'crash', arguments: {} }] },
      { text: 'The server is gone.' },
    ],
  }),
);

const pausesOf = (ws: SemClient): Frame[] => ws.frames.filter((frame) => frame.type === 'debugger.pause');

describe('a step filter naming an MCP tool, through serve --mcp', { timeout: 60_000 }, () => {
  beforeAll(() => ensureBuilt(), 120_000);
  let cli: CliServer | undefined;
  afterAll(async () => {
    await cli?.stop('SIGKILL');
  });

  it('should pause only for that MCP tool, at both phases, and complete the run on continue', async () => {
    cli = await startCli(['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--tools', TOOLS_FILE, '--mcp', mcpFile, '--debug']);
    expect(cli.stdout()).toContain('mcp: fixture (lookup, fail, wait, crash)');
    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=mcp-bp`);
    expect(await post(cli.base, '/debug/step/enable', { conv_id: 'mcp-bp', tools: ['lookup'] })).toMatchObject({ status: 200, body: { ok: true } });
    expect((await get(cli.base, '/conversations/mcp-bp')).body).toMatchObject({ step_mode: true, step_filter: { tools: ['lookup'] } });
    expect((await post(cli.base, '/chat', { prompt: 'look abc up', conv_id: 'mcp-bp' })).status).toBe(200);

    // echo (not in the filter) runs without a pause; the first pause is lookup's.
    const before = await ws.next('debugger.pause');
    expect(ws.frames.find((frame) => frame.type === 'tool.result' && frame.id === 'e1')).toMatchObject({ result: { echoed: 'hi' } });
    expect(before).toMatchObject({ phase: 'after_inference', extra: { pending_tools: ['lookup'], tool_calls: [{ id: 'k1', name: 'lookup', input: { key: 'abc' } }] } });
    expect(ws.frames.some((frame) => frame.type === 'tool.start' && frame.id === 'k1')).toBe(true);
    expect(ws.frames.some((frame) => frame.type === 'tool.result' && frame.id === 'k1')).toBe(false);
    expect((await post(cli.base, '/debug/continue', { pause_id: before.pause_id })).status).toBe(200);

    // The MCP tool ran (its structured result), then the after_tools pause its filter asks for.
    const after = await ws.next('debugger.pause');
    expect(ws.frames.find((frame) => frame.type === 'tool.result' && frame.id === 'k1')).toMatchObject({ result: { key: 'abc', value: 'ABC' } });
    expect(after.phase).toBe('after_tools');
    expect((await post(cli.base, '/debug/continue', { pause_id: after.pause_id })).status).toBe(200);
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect(pausesOf(ws).map((pause) => pause.phase)).toEqual(['after_inference', 'after_tools']);
    expect(ws.frames.filter((frame) => frame.type === 'debugger.resume').map((frame) => frame.reason)).toEqual(['continued', 'continued']);
    const blocks = (await get(cli.base, '/conversations/mcp-bp')).body.turns[0].blocks;
    expect(blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'ABC it is.' } });

    // A run calling only another MCP tool does not pause; the server's death withdraws its tools.
    expect((await post(cli.base, '/chat', { prompt: 'crash', conv_id: 'mcp-bp' })).status).toBe(200);
    expect((await ws.next('tool.result')).error).toContain('MCP server fixture stopped');
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect(pausesOf(ws)).toHaveLength(2);
    await ws.close();
  });
});
