import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/store/memory.js';
import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';

describe('GET /conversations/:conv_id/decisions', () => {
  let t: TestServer | undefined;
  afterEach(async () => t?.close());

  it('lists the store\'s decisions oldest first, 404 unknown, 403 foreign, 401 without token, 405 other methods', async () => {
    const store = createMemoryStore();
    const tokens = new Map([['ta', 'alice'], ['tb', 'bob']]);
    t = await startTestServer({ store, tokens });
    const started = await post(t.base, '/chat', { prompt: 'hi' }, 'ta');
    const conv_id = started.body.conv_id as string;
    const base = { conv_id, phase: 'after_inference' as const, inference_id: 'inf', by: 'alice' };
    store.recordDecision({ ...base, pause_id: 'p1', reason: 'continued', at_ms: 1 });
    store.recordDecision({ ...base, pause_id: 'p2', reason: 'edited', at_ms: 2, edits: { c1: { before: { a: 1 }, after: { a: 2 } } } });
    const listed = await get(t.base, `/conversations/${conv_id}/decisions`, 'ta');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      decisions: [
        { pause_id: 'p1', phase: 'after_inference', inference_id: 'inf', reason: 'continued', by: 'alice', at_ms: 1 },
        { pause_id: 'p2', phase: 'after_inference', inference_id: 'inf', reason: 'edited', by: 'alice', at_ms: 2, edits: { c1: { before: { a: 1 }, after: { a: 2 } } } },
      ],
    });
    expect((await get(t.base, '/conversations/nope/decisions', 'ta')).status).toBe(404);
    expect((await get(t.base, `/conversations/${conv_id}/decisions`, 'tb')).status).toBe(403);
    expect((await get(t.base, `/conversations/${conv_id}/decisions`)).status).toBe(401);
    expect((await request(t.base, 'DELETE', `/conversations/${conv_id}/decisions`, undefined, 'ta')).status).toBe(405);
  });
});
