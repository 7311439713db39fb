import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';

/**
 * The shape rules of STYLE.md, checked on every file of src: a file over its size or a function over
 * its length is a part that wants a seam, and a circle of imports (types included) is two concepts
 * that do not know which of them comes first.
 */
const SRC = join(import.meta.dirname, '../../src');
const MAX_FILE_LINES = 250;
const MAX_FUNCTION_LINES = 60;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const files = sourceFiles(SRC).map((path) => ({ path, name: relative(SRC, path), text: readFileSync(path, 'utf8') }));

function longFunctions(name: string, text: string): string[] {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > MAX_FUNCTION_LINES) found.push(`${name}:${first + 1} (${last - first + 1} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Each file's imports of other files of src, `import type` and re-exports included. */
function importGraph(): Map<string, string[]> {
  const pattern = /(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"](\.[^'"]+)['"]/g;
  const known = new Set(files.map((file) => file.path));
  return new Map(
    files.map(({ path, text }) => [
      path,
      [...text.matchAll(pattern)].map((match) => normalize(join(dirname(path), (match[1] as string).replace(/\.js$/, '.ts')))).filter((target) => known.has(target)),
    ]),
  );
}

/** The strongly connected parts of the graph with more than one file (Tarjan's algorithm, with its own stack). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (start: string): void => {
    const work: Array<{ node: string; edge: number }> = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1] as { node: string; edge: number };
      const edges = graph.get(top.node) ?? [];
      if (top.edge < edges.length) {
        const target = edges[top.edge++] as string;
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edge: 0 });
        } else if (onStack.has(target)) low.set(top.node, Math.min(low.get(top.node) as number, index.get(target) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(top.node) as number));
      if (low.get(top.node) !== index.get(top.node)) continue;
      const part: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        part.push(relative(SRC, member));
      } while (member !== top.node);
      if (part.length > 1) found.push(part.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) connect(node);
  return found;
}

describe('the shape of src (STYLE.md)', () => {
  it(`should keep every file at ${MAX_FILE_LINES} lines or fewer`, () => {
    const long = files.map(({ name, text }) => ({ name, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) })).filter(({ lines }) => lines > MAX_FILE_LINES);
    expect(long.map(({ name, lines }) => `${name} (${lines} lines)`)).toEqual([]);
  });

  it(`should keep every function at ${MAX_FUNCTION_LINES} lines or fewer`, () => {
    expect(files.flatMap(({ name, text }) => longFunctions(name, text))).toEqual([]);
  });

  it('should have no circle of imports between files, types included', () => {
    expect(circles(importGraph())).toEqual([]);
  });
});
