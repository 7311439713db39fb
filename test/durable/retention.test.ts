import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { runCli } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, until, useDurableServers } from './helpers.js';

/** Issue 10: a frame retention setting, so a long-lived server's log cannot grow without bound. */
describe('serve --max-frames-per-conversation (SQLite)', () => {
  const { dir: d, serve } = useDurableServers();

  /** Three runs of about 800 frames each (every word of the answer streams as a delta). */
  const longScript = (): string => {
    const file = join(d().dir, 'long.json');
    const answer = (run: number): { text: string } => ({ text: Array.from({ length: 800 }, (_, i) => `r${run}w${i}`).join(' ') });
    writeFileSync(file, JSON.stringify({ responses: [answer(1), answer(2), answer(3)] }));
    return file;
  };

  /** Runs the three answers one after the other, each once the one before has ended. */
  const runThree = async (base: string): Promise<void> => {
    for (let run = 0; run < 3; run += 1) {
      expect((await post(base, '/chat', { prompt: `go ${run}`, conv_id: 'long' })).status).toBe(200);
      await until(() => conversation(base, 'long'), (c) => c.running === false && c.turns.length === run + 1);
    }
  };

  const hydrate = async (base: string): Promise<{ first: number; last_seq: number; count: number }> => {
    const { body } = await get(base, '/hydrate?conv_id=long&since_seq=0&limit=10000');
    return { first: body.frames[0].event.seq, last_seq: body.last_seq, count: body.frames.length };
  };

  it('should keep only the newest frames (at least N) across a kill -9, and every frame without the flag', async () => {
    const script = longScript();
    const bounded = await serve(d(), script, ['--max-frames-per-conversation', '1000']);
    await runThree(bounded.base);
    const live = await hydrate(bounded.base);
    await bounded.stop('SIGKILL');

    const restarted = await serve(d(), script, ['--max-frames-per-conversation', '1000']);
    const stored = await hydrate(restarted.base);
    expect(stored.last_seq).toBe(live.last_seq);
    expect(stored.first).toBeGreaterThan(1);
    expect(stored.count).toBe(stored.last_seq - stored.first + 1);
    expect(stored.count).toBeGreaterThanOrEqual(1000);
    // A client replaying from 0 starts at the oldest kept frame, and seq goes on after the restart.
    const ws = await SemClient.connect(`${restarted.wsBase}/ws?conv_id=long&since_seq=0`);
    const replayed = await ws.waitFor((frame) => frame.seq === stored.last_seq);
    expect(ws.frames.find((frame) => frame.seq !== undefined)?.seq).toBe(stored.first);
    expect(replayed.type).toBe('run.end');
    await ws.close();
    expect((await conversation(restarted.base, 'long')).turns).toHaveLength(3);
    await restarted.stop('SIGKILL');

    const unbounded = await serve(d(), script, ['--data-dir', join(d().dir, 'unbounded')]);
    await runThree(unbounded.base);
    expect(await hydrate(unbounded.base)).toEqual({ first: 1, last_seq: live.last_seq, count: live.last_seq });
  }, 60_000);

  it('should refuse fewer than the 1000 frames /hydrate promises', () => {
    const { status, output } = runCli(['serve', '--max-frames-per-conversation', '999', '--port', '0']);
    expect(status).toBe(1);
    expect(output).toMatch(/--max-frames-per-conversation must be an integer from 1000/);
  });
});
