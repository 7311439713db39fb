import { createHash } from 'node:crypto';
import { z } from 'zod';
import { createScriptedEngine, createStepwise, createToolExecutor, createToolRegistry, defineTool, type PauseInfo } from '../../src/index.js';
import { argsDigest } from '../../src/core/args-digest.js';
import { createMemoryStore } from '../../src/store/memory.js';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

describe('argsDigest', () => {
  it('should digest the RFC 8785 canonical JSON: sorted keys, shortest numbers, no whitespace', () => {
    expect(argsDigest({ b: [1, 2.5e1, 'x'], a: { d: true, c: null } })).toBe(sha256('{"a":{"c":null,"d":true},"b":[1,25,"x"]}'));
    expect(argsDigest({ city: 'Oslo', n: 1.0 })).toBe(argsDigest({ n: 1, city: 'Oslo' }));
    expect(argsDigest({ city: 'Oslo' })).not.toBe(argsDigest({ city: 'Bergen' }));
    expect(argsDigest({ city: 'Oslo' })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the executor with an approved digest', () => {
  const ran: unknown[] = [];
  const echo = defineTool({ name: 'echo', description: 'echo', parameters: z.object({ n: z.number() }), execute: (args) => (ran.push(args), args) });
  const executor = createToolExecutor(createToolRegistry([echo]));
  const outcomes = (args: unknown, approved?: string) => {
    const seen: { type: string; outcome?: { error?: string; rejected?: string } }[] = [];
    executor.execute({ id: 'call_1', name: 'echo', args }, undefined, approved).subscribe((progress) => seen.push(progress));
    return seen;
  };
  beforeEach(() => void ran.splice(0));

  it('should run a call whose arguments digest as approved', () => {
    expect(outcomes({ n: 1 }, argsDigest({ n: 1 })).map((p) => p.type)).toEqual(['started', 'finished']);
    expect(ran).toEqual([{ n: 1 }]);
  });

  it('should refuse a call whose arguments changed after approval, without starting it', () => {
    const seen = outcomes({ n: 2 }, argsDigest({ n: 1 }));
    expect(seen).toEqual([{ type: 'finished', outcome: expect.objectContaining({ error: 'arguments changed after approval', rejected: 'args_changed' }) }]);
    expect(ran).toEqual([]);
  });
});

describe('decisions bound to what runs', () => {
  const tool = (name: string) => defineTool({ name, description: name, parameters: z.object({ city: z.string() }), execute: ({ city }) => city });

  async function decideAt(command: (pause: PauseInfo) => Record<string, unknown>) {
    const store = createMemoryStore();
    const sw = createStepwise({
      store,
      engine: createScriptedEngine({
        responses: [
          { tool_calls: [{ id: 'c1', name: 'a', arguments: { city: 'Oslo' } }, { id: 'c2', name: 'b', arguments: { city: 'Rome' } }] },
          { text: 'done' },
        ],
      }),
      tools: [tool('a'), tool('b')],
    });
    const session = sw.sessions.open({ conv_id: 'bound' });
    sw.controller.enable(session.session_id, { phases: ['after_inference'] });
    const pauses: PauseInfo[] = [];
    sw.hub.events$.subscribe(({ event }) => void (event.type === 'paused' && pauses.push(event.pause)));
    const run = session.start({ prompt: 'go' });
    const [pause] = pauses;
    expect(sw.controller.submit({ pause_id: pause!.pause_id, ...command(pause!) }).ok).toBe(true);
    const result = await run.result();
    await store.flush();
    const decisions = await store.decisions('bound');
    sw.dispose();
    return { result, decisions };
  }

  it('should record the digest of each call that runs, after edits', async () => {
    const { result, decisions } = await decideAt((pause) => ({ pause_id: pause.pause_id, action: 'edit', edits: { c2: { city: 'Bergen' } } }));
    expect(decisions[0]?.args_digests).toEqual({ c1: argsDigest({ city: 'Oslo' }), c2: argsDigest({ city: 'Bergen' }) });
    expect(result.turn.blocks.filter((block) => block.kind === 'tool_use').map((block) => block.payload)).toEqual([
      { id: 'c1', result: 'Oslo' },
      { id: 'c2', result: 'Bergen' },
    ]);
  });

  it('should leave denied calls out of the digests', async () => {
    const { decisions } = await decideAt((pause) => ({ pause_id: pause.pause_id, action: 'deny', tool_call_ids: ['c1'] }));
    expect(decisions[0]?.args_digests).toEqual({ c2: argsDigest({ city: 'Rome' }) });
  });
});
