import { selectEngine, LOCAL_SERVER_API_KEY } from '../../src/engines/select-engine.js';
import { collect, firstStep, inference } from '../helpers/engine-harness.js';
import { chatFrames, loadChunks, startReplayServer, stream } from '../helpers/provider-replay-server.js';

describe('selectEngine', async () => {
  it('should pick OpenAI Chat Completions under auto when OPENAI_API_KEY is set', async () => {
    const picked = await selectEngine({ engine: 'auto', env: { OPENAI_API_KEY: 'sk-1', ANTHROPIC_API_KEY: 'sk-ant' } });
    expect(picked.kind).toBe('openai');
    expect(picked.reason).toContain('OPENAI_API_KEY is set');
    expect(picked.kind !== 'scripted' && picked.engine).toMatchObject({ name: 'openai', model: 'gpt-5.4-mini' });
  });

  it('should pick Anthropic under auto when only ANTHROPIC_API_KEY is set', async () => {
    const picked = await selectEngine({ engine: 'auto', model: 'claude-opus-4-7', env: { ANTHROPIC_API_KEY: 'sk-ant' } });
    expect(picked.kind).toBe('anthropic');
    expect(picked.reason).toContain('ANTHROPIC_API_KEY is set');
    expect(picked.kind !== 'scripted' && picked.engine).toMatchObject({ name: 'anthropic', model: 'claude-opus-4-7' });
  });

  it('should fall back to scripted under auto without keys, saying why', async () => {
    const picked = await selectEngine({ engine: 'auto', env: { OPENAI_API_KEY: '' } });
    expect(picked).toEqual({ kind: 'scripted', reason: expect.stringContaining('neither OPENAI_API_KEY nor ANTHROPIC_API_KEY') });
  });

  it('should return scripted when asked for it, whatever the keys', async () => {
    expect((await selectEngine({ engine: 'scripted', env: { OPENAI_API_KEY: 'sk-1' } })).kind).toBe('scripted');
  });

  it('should build the Responses engine for openai-responses', async () => {
    const picked = await selectEngine({ engine: 'openai-responses', model: 'gpt-5.4', env: { OPENAI_API_KEY: 'sk-1' } });
    expect(picked.kind !== 'scripted' && picked.engine).toMatchObject({ name: 'openai-responses', model: 'gpt-5.4' });
  });

  it('should fail clearly for an explicit provider without its key', async () => {
    await expect(selectEngine({ engine: 'anthropic', env: {} })).rejects.toThrow(/ANTHROPIC_API_KEY/);
    await expect(selectEngine({ engine: 'openai', env: {} })).rejects.toThrow(/OPENAI_API_KEY/);
    await expect(selectEngine({ engine: 'nope' as never, env: {} })).rejects.toThrow(/unknown engine "nope"/);
  });

  it('should reach an OpenAI-compatible local server at --base-url without a key', async () => {
    const server = await startReplayServer();
    try {
      const picked = await selectEngine({ engine: 'openai', model: 'llama3.2', baseUrl: server.url('/v1'), env: {} });
      expect(picked.reason).toContain(`at ${server.url('/v1')}`);
      expect(picked.reason).toContain('placeholder key');
      if (picked.kind === 'scripted') throw new Error('expected an engine');
      server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
      const { error } = await collect(picked.engine.infer(inference(firstStep)));
      expect(error).toBeUndefined();
      expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${LOCAL_SERVER_API_KEY}`);
      expect(server.requests[0]!.body.model).toBe('llama3.2');
    } finally {
      await server.close();
    }
  });

  it('should take the base URL from OPENAI_BASE_URL or ANTHROPIC_BASE_URL, the flag winning', async () => {
    const server = await startReplayServer();
    try {
      const env = { OPENAI_API_KEY: 'sk-env', OPENAI_BASE_URL: server.url('/v1') };
      const picked = await selectEngine({ engine: 'auto', env });
      if (picked.kind === 'scripted') throw new Error('expected an engine');
      server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
      await collect(picked.engine.infer(inference(firstStep)));
      expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-env');

      const flagged = await selectEngine({ engine: 'anthropic', baseUrl: 'http://127.0.0.1:1/flag', env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1/env' } });
      expect(flagged.reason).toContain('at http://127.0.0.1:1/flag');
    } finally {
      await server.close();
    }
  });
});
