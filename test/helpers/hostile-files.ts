import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOOKING_ANSWER } from './question-files.js';
import { hostileResponses, scriptText, type HostileResponse, type ScriptOptions } from './hostile-model.js';
import type { Rng } from './seeded-rng.js';

/** What `mirror` returns for edits the fuzzer makes, and what the question accepts. */
export const GOOD_BOOKING = { city: 'Lyon', nights: 2, room: 'double', breakfast: true };

/**
 * The tools file: `echo`, `mirror` (returns its arguments), `gate` (a breakpoint), `picky` (a breakpoint whose
 * predicate throws on most arguments), `boom` (throws), `slow` (waits, honours its signal), `deep_result` (returns
 * a value nested 5 000 deep), and the question `ask_booking`.
 */
export function writeHostileTools(dir: string): string {
  const file = join(dir, 'hostile-tools.mjs');
  writeFileSync(
    file,
    `const text = { type: 'object', properties: { text: { type: 'string' } } };
export default [
  { name: 'echo', description: 'echoes', parameters: text, execute: (args) => ({ text: args.text }) },
  { name: 'mirror', description: 'returns its arguments', parameters: { type: 'object' }, execute: (args) => args },
  { name: 'gate', description: 'always asks first', breakpoint: true, parameters: text, execute: (args) => ({ gated: args.text ?? null }) },
  { name: 'picky', description: 'asks when its predicate says so', breakpoint: (args) => args.level.deep === true, parameters: { type: 'object' }, execute: () => 'picky ran' },
  { name: 'boom', description: 'fails', parameters: { type: 'object' }, execute: () => { throw new Error('boom \\ud800'); } },
  {
    name: 'slow', description: 'waits', parameters: { type: 'object' },
    execute: (_args, { signal }) => new Promise((done, fail) => {
      const timer = setTimeout(() => done('slept'), 150);
      signal?.addEventListener('abort', () => { clearTimeout(timer); fail(new Error('aborted')); });
    }),
  },
  {
    name: 'deep_result', description: 'returns a value nested args.levels deep (default 5 000)', parameters: { type: 'object' },
    execute: (args) => { let value = 1; const levels = typeof args.levels === 'number' ? Math.min(args.levels, 100000) : 5000; for (let i = 0; i < levels; i += 1) value = { a: value }; return value; },
  },
  {
    name: 'ask_booking', description: 'Asks the user where and how long to stay.',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
    human: { answer: ${JSON.stringify(BOOKING_ANSWER)} },
  },
];\n`,
  );
  return file;
}

/** Writes the tools file and a hostile script for `seed`; returns their paths and the responses. */
export function writeHostileFiles(dir: string, rng: Rng, options: ScriptOptions): { readonly tools: string; readonly script: string; readonly responses: readonly HostileResponse[] } {
  const responses = hostileResponses(rng, options);
  const script = join(dir, 'hostile-script.json');
  writeFileSync(script, scriptText(responses, rng.pick([0, 0, 1])));
  return { tools: writeHostileTools(dir), script, responses };
}
