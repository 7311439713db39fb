import { createScriptedEngine } from '../../src/engines/scripted.js';
import { createSequentialIds } from '../../src/core/ids.js';
import { get, post, startTestServer, toolThenAnswer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';

const llmFrames = (client: SemClient): Frame[] => client.sequenced.filter((frame) => frame.type.startsWith('llm.'));

describe('two servers in one process', () => {
  let alpha: TestServer;
  let beta: TestServer;
  beforeAll(async () => {
    // The same ids on both sides (conversation, session, run, turn), so only the model tells them apart.
    const start = (model: string): Promise<TestServer> =>
      startTestServer({ runtime: { engine: createScriptedEngine(toolThenAnswer(5, 1), { model }), ids: createSequentialIds() } });
    [alpha, beta] = await Promise.all([start('alpha'), start('beta')]);
  });
  afterAll(() => Promise.all([alpha.close(), beta.close()]));

  it('should not mix their frames or metadata, live or hydrated', async () => {
    const a = await SemClient.connect(`${alpha.wsBase}/ws?conv_id=same`);
    const b = await SemClient.connect(`${beta.wsBase}/ws?conv_id=same`);
    expect(a.hello.engine).toEqual({ name: 'scripted', model: 'alpha' });
    expect(b.hello.engine).toEqual({ name: 'scripted', model: 'beta' });
    const [chatA, chatB] = await Promise.all([
      post(alpha.base, '/chat', { prompt: 'go', conv_id: 'same' }),
      post(beta.base, '/chat', { prompt: 'go', conv_id: 'same' }),
    ]);
    expect(chatA.body.inference_id).toBe(chatB.body.inference_id);
    await Promise.all([a.next('run.end'), b.next('run.end')]);

    for (const [client, model, server] of [[a, 'alpha', alpha], [b, 'beta', beta]] as const) {
      const frames = llmFrames(client);
      expect(frames.filter((frame) => frame.type === 'llm.delta').length).toBeGreaterThan(2);
      for (const frame of frames) {
        if (frame.type === 'llm.final') expect(frame.metadata.model).toBe(model);
        else if (frame.type !== 'llm.error') expect(frame.metadata).toEqual({ inference_id: chatA.body.inference_id, turn_id: expect.any(String), session_id: client.hello.session_id, model });
      }
      const hydrated = await get(server.base, '/hydrate?conv_id=same');
      expect(hydrated.body.frames).toEqual(client.sequenced.map((event) => ({ sem: true, event })));
    }
    await Promise.all([a.close(), b.close()]);
  });
});
