import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { docFiles, ROOT } from './markdown-blocks.js';

/** `[text](target)` links outside code spans and blocks; web links and pure anchors are left out. */
function relativeLinks(file: string): { target: string; line: number }[] {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, (block) => block.replace(/[^\n]/g, ' '));
  return text.split('\n').flatMap((line, i) =>
    [...line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1] as string)
      .filter((target) => !/^[a-z]+:/.test(target) && !target.startsWith('#'))
      .map((target) => ({ target, line: i + 1 })),
  );
}

describe('links between the docs', () => {
  it.each(docFiles().map((file) => [relative(ROOT, file), file]))('should resolve every relative link of %s', (_name, file) => {
    const broken = relativeLinks(file)
      .filter(({ target }) => !existsSync(resolve(dirname(file), target.replace(/#.*$/, ''))))
      .map(({ target, line }) => `line ${line}: ${target}`);
    expect(broken).toEqual([]);
    // A clone has nothing outside the repository: no link may leave it.
    const outside = relativeLinks(file).filter(({ target }) => relative(ROOT, resolve(dirname(file), target)).startsWith('..'));
    expect(outside).toEqual([]);
  });
});
