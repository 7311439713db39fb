import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

/**
 * The server's own memory per conversation (issue 26): on a durable store every frame carries the text
 * it was committed with, so the frame encoder learns nothing live and keeps nothing per conversation
 * (it remembered the model messages of the newest 10 000 conversations, about 600 bytes each). Measured
 * in fresh processes with `--expose-gc` (./memory-probe/encoder.ts): the heap after one inference's
 * frames of 10 000 conversations, with the encoder following the frame log and without it.
 */
const PROBE = fileURLToPath(new URL('./memory-probe/encoder.ts', import.meta.url));
const CONVERSATIONS = 10_000;

async function heapWith(mode: 'with' | 'without'): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-encoder-memory-'));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', PROBE, dir, String(CONVERSATIONS), mode]);
    return (JSON.parse(stdout) as { heap: number }).heap;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the frame encoder on a durable store', () => {
  it('should keep nothing per conversation', async () => {
    const [without, withEncoder] = [await heapWith('without'), await heapWith('with')];
    expect((withEncoder - without) / CONVERSATIONS).toBeLessThan(50);
  }, 120_000);
});
