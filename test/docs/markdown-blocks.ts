import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The documents whose blocks are checked: the README and every `docs/*.md`. */
export function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(ROOT, 'docs', name));
  return [join(ROOT, 'README.md'), ...docs];
}

/** How a block is treated, from its info string (see the convention in code-blocks.test.ts). */
export type BlockKind = 'module' | 'test' | 'processes' | 'json' | 'shown';

export interface CodeBlock {
  /** `README.md:42`: the document and the line of the opening fence. */
  readonly where: string;
  readonly lang: string;
  readonly kind: BlockKind;
  readonly code: string;
  /** For `processes=N`: how many processes run it, one after another. */
  readonly processes?: number;
}

/** `processes=N` in the info string: the block is a program run N times, each a fresh `node`. */
const PROCESSES = /\bprocesses=(\d+)\b/;

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$/;

/** Fenced code blocks of one Markdown file, with where they start and what the convention makes of them. */
export function codeBlocks(file: string): CodeBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] as string);
    if (!open) continue;
    const [, indent = '', fence = '', lang = '', info = ''] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !(lines[j] as string).trimStart().startsWith(fence); j++) body.push((lines[j] as string).slice(indent.length));
    const code = body.join('\n');
    const where = `${relative(ROOT, file)}:${i + 1}`;
    const kind = kindOf(lang, info, code);
    blocks.push(kind === 'processes' ? { where, lang, kind, code, processes: Number(PROCESSES.exec(info)?.[1]) } : { where, lang, kind, code });
    i = j;
  }
  return blocks;
}

function kindOf(lang: string, info: string, code: string): BlockKind {
  if (/\bnorun\b/.test(info)) return 'shown';
  if (lang === 'json') return 'json';
  if (lang !== 'ts' && lang !== 'js') return 'shown';
  if (PROCESSES.test(info)) return 'processes';
  return /\b(describe|it|test)\(/.test(code) ? 'test' : 'module';
}
