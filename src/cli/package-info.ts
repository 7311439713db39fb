import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version in stepwise's own package.json, read at run time: the nearest package.json above this
 * module, which is the package root both from `src/cli` (tests) and from an installed `dist/src/cli`.
 */
export function packageVersion(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version ?? 'unknown');
    if (dirname(dir) === dir) return 'unknown';
  }
}
