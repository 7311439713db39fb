import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';

/**
 * Agents inside agents through the real CLI (docs/protocol.md, Agents inside agents and Tools file): a tools file
 * whose `lead` agent hands work to its `research` agent, whose child adds. A 2-level tree in one stream, a pause at
 * depth 2 answered without the debugger route, and `--max-agent-depth`.
 */
function writeAgentFiles(dir: string): { tools: string; script: string } {
  const tools = join(dir, 'tools.mjs');
  writeFileSync(
    tools,
    `export default [
  { name: 'add', description: 'Adds.', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    execute: ({ a, b }) => ({ sum: a + b }) },
  { name: 'research', description: 'Researches.', parameters: { type: 'object', properties: { prompt: { type: 'string' } } },
    agent: { tools: ['add'], script: { responses: [{ tool_calls: [{ id: 'x1', name: 'add', arguments: { a: 2, b: 3 } }] }, { text: 'five' }] } } },
  { name: 'lead', description: 'Leads.', parameters: { type: 'object', properties: { prompt: { type: 'string' } } },
    agent: { tools: ['research'], system: 'You lead.', script: { responses: [{ tool_calls: [{ id: 'l1', name: 'research', arguments: { prompt: 'add them' } }] }, { text: 'research says five' }] } } },
];
`,
  );
  const script = join(dir, 'script.json');
  writeFileSync(script, JSON.stringify({ responses: [{ tool_calls: [{ id: 'r1', name: 'lead', arguments: { prompt: 'find the sum' } }] }, { text: 'all done' }] }));
  return { tools, script };
}

describe('agents inside agents through the CLI', () => {
  let dir: string;
  let files: { tools: string; script: string };
  const started: CliServer[] = [];
  const serve = async (extra: readonly string[] = []): Promise<CliServer> => {
    const server = await startCli(['--port', '0', '--tools', files.tools, '--script', files.script, ...extra]);
    started.push(server);
    return server;
  };
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-agents-'));
    files = writeAgentFiles(dir);
  });
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('should run a 2-level tree in one stream and answer a depth-2 pause by POST /pauses/:pause_id', async () => {
    // A breakpoint at `add` would need a tools-file predicate; step mode pauses every depth, and is a debug feature.
    const server = await serve(['--debug']);
    const conv = 'tree-1';
    const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}`);
    expect((await post(server.base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    const answered: any[] = [];
    for (;;) {
      const pause = await ws.waitFor((frame) => frame.type === 'debugger.pause' && !answered.some((seen) => seen.pause_id === frame.pause_id));
      answered.push(pause);
      if (pause.depth === 2) {
        const listed = (await get(server.base, '/pauses')).body.pauses;
        expect(listed).toEqual([expect.objectContaining({ pause_id: pause.pause_id, depth: 2, path: pause.path })]);
      }
      expect((await post(server.base, `/pauses/${pause.pause_id}`, {})).status).toBe(200);
      if (pause.depth === undefined && pause.phase === 'after_tools') break;
    }
    const end = await ws.waitFor((frame) => frame.type === 'run.end' && frame.depth === undefined);
    expect(end).toMatchObject({ status: 'completed' });
    expect(answered.map((pause) => `${pause.phase}@${pause.depth ?? 0}`)).toEqual([
      'after_inference@0',
      'after_inference@1',
      'after_inference@2',
      'after_tools@2',
      'after_tools@1',
      'after_tools@0',
    ]);
    const deepest = answered.find((pause) => pause.depth === 2);
    const starts = ws.sequenced.filter((frame) => frame.type === 'run.start');
    expect(starts.map((frame) => [frame.agent, frame.depth])).toEqual([[undefined, undefined], ['lead', 1], ['research', 2]]);
    expect(deepest.path.map((step: { name: string; tool_call_id: string }) => [step.name, step.tool_call_id])).toEqual([['lead', 'r1'], ['research', 'l1']]);
    expect(deepest.path[0].inference_id).toBe(starts[0]?.inference_id);
    expect(deepest.path[1].inference_id).toBe(starts[1]?.inference_id);
    // Results flow up: the grandchild's sum, the child's text, the lead's text; one gapless seq for all three runs.
    expect(ws.sequenced.filter((frame) => frame.type === 'tool.result').map((frame) => [frame.id, frame.result, frame.depth])).toEqual([
      ['x1', { sum: 5 }, 2],
      ['l1', 'five', 1],
      ['r1', 'research says five', undefined],
    ]);
    expect(ws.sequenced.map((frame) => frame.seq)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    await ws.close();
  });

  it('should answer a call past --max-agent-depth with an error and start no run there', async () => {
    const server = await serve(['--max-agent-depth', '1']);
    const conv = 'tree-2';
    const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}`);
    expect((await post(server.base, '/chat', { prompt: 'go', conv_id: conv })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end' && frame.depth === undefined)).toMatchObject({ status: 'completed' });
    expect(ws.sequenced.filter((frame) => frame.type === 'run.start').map((frame) => frame.agent)).toEqual([undefined, 'lead']);
    const refused = ws.sequenced.find((frame) => frame.type === 'tool.result' && frame.id === 'l1');
    expect(refused).toMatchObject({ result: null, error: expect.stringContaining('max agent depth'), depth: 1 });
    await ws.close();
  });

  it('should stop at start naming the agent and the field of a bad agent entry', async () => {
    writeFileSync(files.tools, `export default [{ name: 'lead', description: 'x', parameters: { type: 'object' }, agent: { tools: ['nope'] } }];\n`);
    await expect(serve()).rejects.toThrow(/tool lead: agent\.tools names "nope"/);
  });
});
