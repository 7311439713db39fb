import { firstValueFrom, Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createPauseIndex } from '../../src/service/pause-index.js';
import type { PauseFeedFrame } from '../../src/core/directory.js';
import { createScriptedEngine, createStepwise, defineTool } from '../../src/index.js';

const echo = defineTool({ name: 'echo', description: 'echo', parameters: z.object({ text: z.string() }), execute: ({ text }) => ({ text }) });

/**
 * The cluster's pause index (src/service/pause-index.ts) learns a pause's conversation from the service's pause feed
 * too: the frames every instance publishes, as their text alone, with no socket of this instance relaying them.
 */
describe('createPauseIndex', () => {
  it("should learn a pause's conversation from the pause feed's frames, their text alone as another instance published them", async () => {
    const sw = createStepwise({ engine: createScriptedEngine({ responses: [{ tool_calls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] }), tools: [echo] });
    const feed = new Subject<PauseFeedFrame>();
    const index = createPauseIndex(feed);
    const frames: PauseFeedFrame[] = [];
    sw.directory.pauseFrames$.subscribe((frame) => frames.push(frame));
    const session = sw.sessions.open({ conv_id: 'elsewhere' });
    sw.controller.enable(session.session_id);
    const pausedAt = firstValueFrom(sw.frames.events$);
    session.start({ prompt: 'go' });
    await pausedAt;
    const [pause] = sw.controller.pending();
    expect(pause).toBeDefined();
    expect(frames.length).toBeGreaterThan(0);
    // Another instance's frames, as the feed relays them.
    for (const frame of frames) feed.next({ ...frame });
    expect(index.convOf(pause?.pause_id as string)).toBe('elsewhere');
    expect(index.convOf('pause_unknown')).toBeUndefined();
    sw.controller.submit({ pause_id: pause?.pause_id as string });
    index.dispose();
    sw.dispose();
  });
});
