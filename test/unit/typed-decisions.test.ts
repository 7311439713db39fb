import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { z } from 'zod';
import {
  continueWith,
  createScriptedEngine,
  createSequentialIds,
  createStepwise,
  defineTool,
  denyWith,
  editCall,
  editWith,
  type ArgsOf,
  type ContinueCommand,
  type Tool,
} from '../../src/index.js';

const weather = defineTool({
  name: 'get_weather',
  description: 'Weather for a city.',
  parameters: z.object({ city: z.string(), unit: z.enum(['c', 'f']).optional() }),
  execute: ({ city, unit = 'c' }) => ({ city, temp: unit === 'c' ? 21 : 70 }),
});
const add = defineTool({
  name: 'add',
  description: 'Adds.',
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

describe('typed decisions: compile time', () => {
  it('should type each tool by its schema', () => {
    expectTypeOf<ArgsOf<typeof weather>>().toEqualTypeOf<{ city: string; unit?: 'c' | 'f' | undefined }>();
    expectTypeOf<ArgsOf<typeof add>>().toEqualTypeOf<{ a: number; b: number }>();
    // A typed tool is still a plain Tool for the registry.
    expectTypeOf(weather).toExtend<Tool>();
    expectTypeOf(editWith('p', editCall(add, 'call_1', { a: 1, b: 2 }))).toEqualTypeOf<ContinueCommand>();
  });

  it('should refuse arguments that do not fit the tool: each guarded line of the fixture is an error', () => {
    const written = readFileSync(FIXTURE, 'utf8');
    const lines = written.split('\n');
    const isDirective = (line: string): boolean => line.trimStart().startsWith('// @ts-expect-error');
    const guarded = lines.flatMap((line, i) => (isDirective(line) ? [i + 2] : []));
    const stripped = lines.map((line) => (isDirective(line) ? '' : line)).join('\n');
    const errors = compile({ [FIXTURE]: written, [STRIPPED]: stripped });
    expect(guarded).toHaveLength(4);
    // As written it compiles; without the directives, exactly the lines they guarded are errors.
    expect(errors[FIXTURE]).toEqual([]);
    expect(errors[STRIPPED]?.map((e) => e.line)).toEqual(guarded);
  }, 60_000);
});

const FIXTURE = fileURLToPath(new URL('./fixtures/typed-edits.ts', import.meta.url));
/** An in-memory sibling of the fixture, so its relative imports resolve the same. */
const STRIPPED = FIXTURE.replace(/\.ts$/, '.stripped.ts');

/** Type-checks in-memory files (path -> text) in one program, with the project's compiler options. */
function compile(files: Record<string, string>): Record<string, { line: number; message: string }[]> {
  const configPath = fileURLToPath(new URL('../../tsconfig.json', import.meta.url));
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  if (!config) throw new Error(`cannot read ${configPath}`);
  // No ambient types: the fixture needs none, and loading node's and vitest's costs seconds.
  const options = { ...config.options, noEmit: true, types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => resolve(name) in files || exists(name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files[resolve(name)];
    return text === undefined ? read(name, language, ...rest) : ts.createSourceFile(name, text, language);
  };
  const program = ts.createProgram({ rootNames: Object.keys(files), options, host });
  return Object.fromEntries(
    Object.keys(files).map((name) => [
      name,
      ts.getPreEmitDiagnostics(program, program.getSourceFile(name)).map((d) => ({
        line: d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0,
        message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
      })),
    ]),
  );
}

describe('typed decisions: run time', () => {
  function pausedRun() {
    const sw = createStepwise({
      engine: createScriptedEngine({
        responses: [
          { tool_calls: [{ id: 'call_w', name: 'get_weather', arguments: { city: 'Pari' } }, { id: 'call_a', name: 'add', arguments: { a: 1, b: 1 } }] },
          { text: 'done' },
        ],
      }),
      tools: [weather, add],
      ids: createSequentialIds(),
    });
    const session = sw.sessions.open();
    sw.controller.enable(session.session_id);
    return { sw, run: session.start({ prompt: 'go' }) };
  }

  it('should produce the plain JSON command, and run the calls with the edited arguments', async () => {
    const { sw, run } = pausedRun();
    const pause = await run.nextPause();
    if (!pause) throw new Error('expected a pause');
    const command = editWith(pause, editCall(weather, pause.tool_calls[0]!, { city: 'Paris' }), editCall(add, 'call_a', { a: 40, b: 2 }));
    expect(JSON.parse(JSON.stringify(command))).toEqual({ pause_id: pause.pause_id, action: 'edit', edits: { call_w: { city: 'Paris' }, call_a: { a: 40, b: 2 } } });
    expect(sw.controller.submit(command)).toMatchObject({ ok: true });
    const afterTools = await run.nextPause();
    expect(sw.controller.submit(continueWith(afterTools!))).toMatchObject({ ok: true });
    const result = await run.result();
    const uses = result.turn.blocks.filter((b) => b.kind === 'tool_use').map((b) => b.payload);
    expect(uses).toEqual([
      { id: 'call_w', result: { city: 'Paris', temp: 21 } },
      { id: 'call_a', result: 42 },
    ]);
  });

  it('should throw when the call named is another tool\'s', async () => {
    const { sw, run } = pausedRun();
    const pause = (await run.nextPause())!;
    expect(() => editCall(add, pause.tool_calls[0]!, { a: 1, b: 2 })).toThrow('call call_w is a call of "get_weather", not of "add"');
    expect(denyWith(pause, 'not now', ['call_a'])).toEqual({ pause_id: pause.pause_id, action: 'deny', reason: 'not now', tool_call_ids: ['call_a'] });
    sw.dispose();
  });
});
