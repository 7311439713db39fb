import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, until, useDurableServers } from './helpers.js';

/**
 * A tool's result is whatever its code returned. One that JSON cannot say (a BigInt, a cycle) used to
 * fail the SQLite store's whole batch: every frame and the turn committed with it were lost, and the
 * conversation's frame log stalled, so no client saw anything of it again.
 */
describe('tool results JSON cannot say, on the SQLite store', () => {
  const { dir: d, serve } = useDurableServers();

  const files = (): { tools: string; script: string } => {
    const tools = join(d().dir, 'odd-tools.mjs');
    writeFileSync(
      tools,
      `const schema = { type: 'object', properties: {} };
export default [
  { name: 'big', description: 'a BigInt', parameters: schema, execute: () => ({ n: 10n }) },
  { name: 'cycle', description: 'a cycle', parameters: schema, execute: () => { const o = { name: 'o' }; o.self = o; return o; } },
];\n`,
    );
    const script = join(d().dir, 'odd.json');
    const calls = [
      { id: 'call_big', name: 'big', arguments: {} },
      { id: 'call_cycle', name: 'cycle', arguments: {} },
    ];
    writeFileSync(script, JSON.stringify({ responses: [{ text: 'calling', tool_calls: calls }, { text: 'All done.' }] }));
    return { tools, script };
  };

  const toolUses = (c: { turns: { blocks: { kind: string; payload: unknown }[] }[] }): unknown[] =>
    c.turns[0]?.blocks.filter((block) => block.kind === 'tool_use').map((block) => block.payload) ?? [];
  const ODD_RESULTS = [
    { id: 'call_big', result: { n: '10' } },
    { id: 'call_cycle', result: { name: 'o', self: '[circular]' } },
  ];

  it('should store, deliver and bring back after kill -9 every frame and the turn, the odd values as JSON', async () => {
    const { tools, script } = files();
    const first = await serve(d(), script, ['--tools', tools]);
    const ws = await SemClient.connect(`${first.wsBase}/ws?conv_id=odd`);
    expect((await post(first.base, '/chat', { prompt: 'go', conv_id: 'odd' })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    expect(ws.frames.filter((frame) => frame.type === 'tool.result').map((frame) => frame.result)).toEqual(ODD_RESULTS.map((use) => use.result));
    const live = ws.frames.filter((frame) => frame.seq !== undefined).map((frame) => frame.seq);
    expect(live).toEqual(live.map((_, i) => i + 1));
    await ws.close();
    const before = await until(() => conversation(first.base, 'odd'), (c) => c.running === false);
    expect(toolUses(before)).toEqual(ODD_RESULTS);
    await first.stop('SIGKILL');

    const second = await serve(d(), script, ['--tools', tools]);
    const after = await conversation(second.base, 'odd');
    expect(after.turns[0].blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'All done.' } });
    expect(toolUses(after)).toEqual(ODD_RESULTS);
    const replay = await SemClient.connect(`${second.wsBase}/ws?conv_id=odd&since_seq=0`);
    const replayed = await replay.waitFor((frame) => frame.type === 'run.end');
    expect(replayed.seq).toBe(live.length);
    expect(replay.frames.filter((frame) => frame.type === 'tool.result').map((frame) => frame.result)).toEqual(ODD_RESULTS.map((use) => use.result));
    await replay.close();
  }, 30_000);
});
