import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

/**
 * A long-lived program's memory (docs/library.md, Durable runs): opening, running and closing a
 * conversation on a SQLite store leaves nothing behind in the heap once its session is closed. The
 * store reads a closed conversation's last seq when it is opened again, instead of the runtime and
 * the store remembering it for good. Measured in a fresh process with `--expose-gc`
 * (./memory-probe/open-close.ts), after a full collection, against the heap once warmed up.
 */
const PROBE = fileURLToPath(new URL('./memory-probe/open-close.ts', import.meta.url));
const CONVERSATIONS = 100_000;

describe('closed conversations on a SQLite store', () => {
  it('should leave the heap where it was after 100 000 conversations opened and closed, and go on from the log when one opens again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-memory-'));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', PROBE, dir, String(CONVERSATIONS)], {
        maxBuffer: 1024 * 1024,
      });
      const { before, after, conversations, lastSeq } = JSON.parse(stdout) as { before: number; after: number; conversations: number; lastSeq: number };
      expect(conversations).toBe(90_000);
      // About 400 bytes a conversation were kept before (36 MB here); a few bytes each is noise.
      expect((after - before) / conversations).toBeLessThan(16);
      // c0's run wrote 11 frames, then the session opened again under its id wrote 11 more after them.
      expect(lastSeq).toBe(22);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
