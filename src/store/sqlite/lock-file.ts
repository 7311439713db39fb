import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file in a data dir that names the process holding it. */
export const LOCK_FILE = 'stepwise.lock';

/**
 * The pid-naming half of the data dir lock. The exclusion itself is SQLite's exclusive lock on the
 * database file (a kernel lock, so it dies with its process and never goes stale, and it also
 * refuses a second store in the same process); this file only says who holds it, for the message.
 * A file left by a dead process is simply overwritten by the next holder.
 */
export interface LockFile {
  /** The pid in the file when it names a live process, else undefined (no file, garbage, dead pid). */
  liveHolder(): number | undefined;
  /** Writes our pid: called once the exclusive lock is ours. */
  claim(): void;
  /** Removes the file if it still names us. */
  release(): void;
}

export function createLockFile(dir: string, pid: number = process.pid): LockFile {
  const file = join(dir, LOCK_FILE);
  const holder = (): number | undefined => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    const found = Number.parseInt(text.trim(), 10);
    return Number.isInteger(found) && found > 0 ? found : undefined;
  };
  return {
    liveHolder: () => {
      const found = holder();
      return found !== undefined && isAlive(found) ? found : undefined;
    },
    claim: () => writeFileSync(file, `${pid}\n`),
    release: () => {
      if (holder() === pid) rmSync(file, { force: true });
    },
  };
}

/** Signal 0 checks existence: ESRCH means gone; EPERM means alive but someone else's. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
