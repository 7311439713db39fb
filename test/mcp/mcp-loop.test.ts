import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectMcpServers, createScriptedEngine, createStepwise, type McpServers, type ToolUseBlock } from '../../src/index.js';
import { until } from '../durable/helpers.js';
import { startHttpFixture } from '../fixtures/mcp/http-fixture.js';

const log = join(mkdtempSync(join(tmpdir(), 'stepwise-mcp-loop-')), 'calls.log');
const readLog = async (): Promise<string> => (existsSync(log) ? readFileSync(log, 'utf8') : '');

describe('a loop over a streamable HTTP MCP server', { timeout: 30_000 }, () => {
  let http: { url: string; server: Server };
  let mcp: McpServers;
  beforeAll(async () => {
    http = await startHttpFixture(log);
    mcp = await connectMcpServers({ mcpServers: { remote: { url: http.url } } });
  });
  afterAll(async () => {
    await mcp?.close();
    http?.server.closeAllConnections();
    http?.server.close();
  });

  it('should pause on an MCP call, run it when continued, and cancel a slow one at the server', async () => {
    const engine = createScriptedEngine({
      responses: [
        { tool_calls: [{ id: 'h1', name: 'lookup', arguments: { key: 'oslo' } }] },
        { text: 'OSLO it is.' },
        { tool_calls: [{ id: 'h2', name: 'wait', arguments: { label: 'http-slow' } }] },
      ],
    });
    const sw = createStepwise({ engine, tools: mcp.tools });
    try {
      const session = sw.sessions.open({ conv_id: 'mcp-http' });
      sw.controller.enable(session.session_id);
      const first = session.start({ prompt: 'look up oslo' });
      const pause = await first.nextPause();
      expect(pause?.tool_calls).toEqual([{ id: 'h1', name: 'lookup', input: { key: 'oslo' } }]);
      sw.controller.disable(session.session_id);
      const done = await first.result();
      expect(done.status).toBe('completed');
      const uses = done.turn.blocks.filter((block): block is ToolUseBlock => block.kind === 'tool_use').map((block) => block.payload);
      expect(uses).toEqual([{ id: 'h1', result: { key: 'oslo', value: 'OSLO' } }]);

      const second = session.start({ prompt: 'wait' });
      await until(readLog, (text) => text.includes('started http-slow'));
      expect(session.cancel()).toBe(true);
      expect((await second.result()).status).toBe('cancelled');
      expect(await until(readLog, (text) => text.includes('cancelled http-slow'))).toBe('started http-slow\ncancelled http-slow\n');
    } finally {
      sw.dispose();
    }
  });
});
