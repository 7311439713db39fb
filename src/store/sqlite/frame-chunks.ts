import { toJsonText } from '../../core/json.js';
import type { FrameEvent } from '../../core/store.js';

/**
 * The ids every event of a run carries (`eventFrom` in src/streams/events.ts): about half of each
 * stored event's bytes. A chunk stores those equal in all its events once, in its `shared` column.
 */
const SHARED_KEYS: readonly string[] = Object.freeze(['conv_id', 'session_id', 'inference_id', 'turn_id']);

/** A chunk's row: its events without the shared fields, and those fields (JSON object). */
export interface EncodedChunk {
  readonly shared: string;
  readonly events: string;
}

type Fields = Record<string, unknown>;

/**
 * Encodes the events of one chunk. A key is shared only when every event has it with the same
 * string value, so an event never gains or loses a field on the way back: a chunk holding two runs
 * of one conversation keeps each event's own `inference_id` and `turn_id`.
 * This leaves far fewer bytes per frame stored, and serialising the smaller copies is no slower
 * than serialising the events themselves.
 */
export function encodeChunk(events: readonly FrameEvent[]): EncodedChunk {
  const all = events as unknown as readonly Fields[];
  const shared: Fields = {};
  const keys: string[] = [];
  for (const key of SHARED_KEYS) {
    const value = all[0]?.[key];
    if (typeof value === 'string' && all.every((event) => event[key] === value)) {
      shared[key] = value;
      keys.push(key);
    }
  }
  const rest = all.map((event) => {
    const copy: Fields = {};
    // for…in over a plain event with a literal array was as fast as destructuring the four ids.
    for (const key in event) if (!keys.includes(key)) copy[key] = event[key];
    return copy;
  });
  // A tool result may hold what JSON cannot say: written as JSON makes it, never failing the batch.
  return { shared: JSON.stringify(shared), events: toJsonText(rest) };
}

/**
 * The events of a stored chunk, each with every field it was appended with (the shared ones come
 * last in key order). `shared` is null in chunks written before schema version 2, whose events hold
 * all their fields.
 */
export function decodeChunk<E extends FrameEvent>(shared: string | null, events: string): E[] {
  const parsed = JSON.parse(events) as Fields[];
  if (shared === null) return parsed as unknown as E[];
  const fields = Object.entries(JSON.parse(shared) as Fields);
  for (const event of parsed) for (const [key, value] of fields) event[key] = value;
  return parsed as unknown as E[];
}

/**
 * The frames of a chunk of wire frames: their texts, one a line (JSON as the codec writes it has no
 * line break outside a string, and escapes one inside), so they are stored and read back as the same
 * bytes, with neither an encode nor a parse.
 */
export const joinTexts = (texts: readonly string[]): string => texts.join('\n');

export const splitTexts = (texts: string): string[] => texts.split('\n');
