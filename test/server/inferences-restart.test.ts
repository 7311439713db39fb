import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from '../durable/helpers.js';

// What was sent to the model is kept in memory (see src/server/inference-log.ts for why it is a record):
// across a restart with the SQLite store, a resumed run's next inference is kept under the id its
// frames carry, and one from before the restart is answered 404 with why, never a guess.
describe('GET /conversations/:conv_id/inferences/:message_id across a restart', () => {
  const { dir: d, serve } = useDurableServers();

  it('should name a resumed run’s inference as its frames do, and refuse one from before the restart', async () => {
    const script = d().script('inferences', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'inf-restart');
    const before = ws.frames.find((frame) => frame.type === 'llm.final');
    expect(before?.id).toBe(`${pause.metadata.inference_id}:1`);
    expect((await get(first.base, `/conversations/inf-restart/inferences/${before?.id}`)).status).toBe(200);
    const closed = ws.waitClose();
    expect(await first.stop('SIGTERM')).toBe(0);
    await closed;

    const second = await serve(d(), script);
    const replay = await SemClient.connect(`${second.wsBase}/ws?conv_id=inf-restart&since_seq=0`);
    expect((await post(second.base, '/debug/step/disable', { conv_id: 'inf-restart' })).status).toBe(200);
    await until(() => conversation(second.base, 'inf-restart'), (c) => c.running === false);
    const finals = (await replay.waitFor((frame) => frame.type === 'run.end')) && replay.frames.filter((frame) => frame.type === 'llm.final');
    expect(finals.map((frame) => frame.id)).toEqual([before?.id, `${pause.metadata.inference_id}:2`]);

    const gone = await get(second.base, `/conversations/inf-restart/inferences/${before?.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatchObject({ code: 'unknown_inference', message: expect.stringMatching(/since it started/) });
    const resumed = await get(second.base, `/conversations/inf-restart/inferences/${finals[1]?.id}`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.messages.map((block: { kind: string }) => block.kind)).toEqual(['user', 'llm_text', 'tool_call', 'tool_use']);
    expect(resumed.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['slow', 'slow_idempotent']);
    await replay.close();
  }, 30_000);
});
