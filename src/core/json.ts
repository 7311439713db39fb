/**
 * JSON text for values that may hold what JSON cannot say. A tool's result is whatever its code
 * returned: a BigInt, a cycle or a throwing `toJSON` must not fail the store's batch (every frame and
 * turn in it would be lost) nor the request to the model. Plain values, the common case, cost one
 * `JSON.stringify` as before; only a value that fails it is written again with the replacer.
 */
export function toJsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    try {
      return JSON.stringify(value, jsonSafe()) ?? 'null';
    } catch (error) {
      // A `toJSON` that throws whatever it is given: say so in place of the value.
      return JSON.stringify({ unserializable: error instanceof Error ? error.message : String(error) });
    }
  }
}

/** What `JSON.parse(toJsonText(value))` gives: the value as a reader of the stored JSON will see it. */
export function toJsonValue(value: unknown): unknown {
  return JSON.parse(toJsonText(value)) as unknown;
}

/** A `JSON.stringify` replacer writing BigInts as strings and repeated objects as `"[circular]"`. */
function jsonSafe(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return '[circular]';
      seen.add(value);
    }
    return value;
  };
}

/** Nesting past which a value is taken through JSON (and its cycles cut) rather than walked further. */
const MAX_PLAIN_DEPTH = 64;

/**
 * A tool's result as JSON data: itself when it already is (the common case, checked by a walk that
 * allocates nothing), else what JSON makes of it (a BigInt as a string, a Date as its ISO text, a
 * cycle cut, a Map as `{}`). So the transcript, the store, the wire and the model all see the same
 * value, before a restart and after.
 */
export function asJsonData(value: unknown): unknown {
  return isPlainJson(value, 0) ? value : toJsonValue(value);
}

function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_PLAIN_DEPTH) return false;
      if (Array.isArray(value)) {
        for (const item of value) if (!isPlainJson(item, depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) {
        const field = (value as Record<string, unknown>)[key];
        // A field left undefined is dropped by JSON, here as everywhere: nothing to convert.
        if (field !== undefined && !isPlainJson(field, depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}
