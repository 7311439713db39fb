import { z } from 'zod';
import { createToolRegistry, defineTool, toTool } from '../../src/index.js';

describe('defineTool', () => {
  const weather = defineTool({
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: z.object({ city: z.string().describe('city name'), days: z.number().int().min(1).optional() }),
    execute: ({ city }) => ({ city, temp_c: 21 }),
  });

  it('should advertise JSON Schema made by zod, without the $schema key', () => {
    expect(weather.parameters).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string', description: 'city name' } },
      required: ['city'],
    });
    expect(weather.parameters).not.toHaveProperty('$schema');
  });

  it('should validate arguments with readable issues', () => {
    expect(weather.validate({ city: 'Oslo' })).toEqual({ ok: true, value: { city: 'Oslo' } });
    expect(weather.validate({ city: 1, days: 0 })).toEqual({
      ok: false,
      issues: ['city: Invalid input: expected string, received number', 'days: Too small: expected number to be >=1'],
    });
  });

  it('should accept a plain JSON Schema tool and validate against it', () => {
    const plain = toTool({
      name: 'add',
      description: 'adds',
      parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      execute: (args: unknown) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b,
    });
    expect(plain.validate({ a: 1, b: 2 })).toMatchObject({ ok: true });
    expect(plain.validate({ a: 1 })).toMatchObject({ ok: false, issues: [expect.stringMatching(/^b: /)] });
    expect(plain.parameters).toMatchObject({ required: ['a', 'b'] });
  });

  it('should fail at definition time on a bad name or missing execute', () => {
    expect(() => defineTool({ name: 'bad name!', description: '', parameters: z.object({}), execute: () => 1 })).toThrow(/name must match/);
    expect(() => toTool({ name: 'x', description: '', parameters: {}, execute: undefined as never })).toThrow(/execute must be a function/);
  });

  it('should refuse two tools with one name in a registry and list unknown names', () => {
    expect(() => createToolRegistry([weather, weather])).toThrow(/two tools are named "get_weather"/);
    const registry = createToolRegistry([weather]);
    expect(registry.unknown(['get_weather', 'ghost'])).toEqual(['ghost']);
    expect(registry.specs(new Set(['ghost']))).toEqual([]);
  });
});
