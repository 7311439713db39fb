import { describe, expect, it } from 'vitest';
import type { FrameEvent } from '../../src/core/store.js';
import { decodeChunk, encodeChunk } from '../../src/store/sqlite/frame-chunks.js';
import { frames } from './fixtures.js';

const roundTrip = (events: readonly FrameEvent[]): FrameEvent[] => {
  const { shared, events: json } = encodeChunk(events);
  return decodeChunk(shared, json);
};

/** Each event's fields, sorted: toStrictEqual ignores key order, this also catches a field added as undefined. */
const keySets = (events: readonly FrameEvent[]): string[][] => events.map((event) => Object.keys(event).sort());

describe('frame chunks', () => {
  it('should store the ids shared by every event once, and give each event back with all its fields', () => {
    const events = frames('c1', 1, 5).map((frame) => frame.event);
    const { shared, events: json } = encodeChunk(events);
    expect(JSON.parse(shared)).toEqual({ conv_id: 'c1', session_id: 'sess_c1', inference_id: 'inf_1', turn_id: 'turn_1' });
    expect(json).not.toContain('sess_c1');
    const back = decodeChunk(shared, json);
    expect(back).toStrictEqual(events);
    expect(keySets(back)).toEqual(keySets(events));
  });

  it('should keep the ids that differ within a chunk on each event (two runs of one conversation)', () => {
    const first = frames('c1', 1, 2).map((frame) => frame.event);
    const second = frames('c1', 3, 4).map((frame) => ({ ...frame.event, inference_id: 'inf_2', turn_id: 'turn_2' }));
    const events = [...first, ...second];
    expect(JSON.parse(encodeChunk(events).shared)).toEqual({ conv_id: 'c1', session_id: 'sess_c1' });
    expect(roundTrip(events)).toStrictEqual(events);
  });

  it('should not give an id to an event that had none, nor share a value that is not a string', () => {
    const events = [
      { type: 'log', conv_id: 'c1', session_id: 's', inference_id: 'i', message: 'no turn' },
      { type: 'text-delta', conv_id: 'c1', session_id: 's', inference_id: 'i', turn_id: 't' },
      { type: 'custom', conv_id: 'c1', session_id: 's', inference_id: 'i', turn_id: 7 },
    ];
    expect(JSON.parse(encodeChunk(events).shared)).toEqual({ conv_id: 'c1', session_id: 's', inference_id: 'i' });
    const back = roundTrip(events);
    expect(back).toStrictEqual(events);
    expect(keySets(back)).toEqual(keySets(events));
  });

  it('should read a chunk written before shared ids (no shared column value) as it was stored', () => {
    const events = frames('c1', 1, 3).map((frame) => frame.event);
    expect(decodeChunk(null, JSON.stringify(events))).toStrictEqual(events);
  });
});
