import { describe, expect, it } from 'vitest';
import { asJsonData, toJsonText } from '../../src/core/json.js';

describe('asJsonData (a tool result as JSON data)', () => {
  it('should return plain JSON data itself, not a copy', () => {
    const plain = { text: 'x', list: [1, 'two', null, { deep: true }], none: undefined, bare: Object.create(null) as object };
    expect(asJsonData(plain)).toBe(plain);
    expect(asJsonData('s')).toBe('s');
  });

  it('should turn what JSON cannot say into what JSON makes of it', () => {
    const cycle: Record<string, unknown> = { name: 'o' };
    cycle['self'] = cycle;
    expect(asJsonData({ n: 10n })).toEqual({ n: '10' });
    expect(asJsonData(cycle)).toEqual({ name: 'o', self: '[circular]' });
    expect(asJsonData({ at: new Date(0) })).toEqual({ at: '1970-01-01T00:00:00.000Z' });
    expect(asJsonData([1, undefined, Number.NaN, () => 1])).toEqual([1, null, null, null]);
    expect(asJsonData(new Map([['a', 1]]))).toEqual({});
  });

  it('should stop walking at a depth and still convert (a deep cycle of fresh objects cannot hang it)', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100; i += 1) deep = { next: deep };
    expect(asJsonData(deep)).toEqual(deep);
  });
});

describe('toJsonText', () => {
  it('should write plain values as JSON.stringify does and never throw', () => {
    expect(toJsonText({ a: [1, 'b'] })).toBe('{"a":[1,"b"]}');
    expect(toJsonText(undefined)).toBe('null');
    expect(toJsonText({ n: 1n })).toBe('{"n":"1"}');
    const throwing = { toJSON: () => { throw new Error('no JSON for you'); } };
    expect(JSON.parse(toJsonText(throwing))).toEqual({ unserializable: 'no JSON for you' });
  });
});
