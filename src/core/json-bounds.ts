/**
 * How deep and how large JSON may be where it enters (docs/protocol.md, Untrusted input): a request body,
 * a WebSocket message, a model's tool arguments, a tool's result. Everything past the entry (digests,
 * validation, the store, the wire) walks values recursively; bounding them here, before any other
 * check, is what keeps one hostile value from overflowing the stack inside a timer or a store write.
 * Both checks are loops with their own stack, never recursion: they must survive what they refuse.
 */

/** The most objects and arrays a value may sit inside (docs/protocol.md, Untrusted input). */
export const MAX_JSON_DEPTH = 128;

/** The error code and message of a refused value, the same at every entry. */
export const TOO_DEEP = 'too_deep';
export const TOO_DEEP_MESSAGE = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * Whether JSON text opens more than `limit` objects or arrays inside one another. A scan of the text
 * (brackets outside strings), so it runs before the text is parsed and on text that will not parse.
 */
export function isTextTooDeep(text: string | Uint8Array, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  const length = text.length;
  const isBytes = typeof text !== 'string';
  for (let i = 0; i < length; i += 1) {
    // UTF-8's multi-byte sequences never hold these ASCII codes, so bytes scan as characters do.
    const code = isBytes ? (text[i] as number) : text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i += 1;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth -= 1;
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** What is wrong with a value that entered, if anything. */
export type BoundsProblem = 'too_deep' | 'too_large';

export interface ValueBounds {
  /** Objects and arrays a value may sit inside. Default `MAX_JSON_DEPTH`. */
  readonly maxDepth?: number;
  /** Characters of strings and keys in all, about the size of its JSON. Default unbounded. */
  readonly maxChars?: number;
  /**
   * Walk each object once, as JSON's writers cut a repeat: a value a program made (a tool's result) may
   * share objects or hold a cycle, which is not depth. Default false: a cycle is infinitely deep.
   */
  readonly cutRepeats?: boolean;
}

/**
 * Whether a value (parsed JSON, or what a provider SDK or a tool handed over) is deeper or larger than
 * its bounds; undefined when it is within them. A cycle is infinitely deep: refused, not walked forever.
 */
export function boundsProblem(value: unknown, bounds: ValueBounds = {}): BoundsProblem | undefined {
  const found = charsWithin(value, bounds.maxChars, bounds.maxDepth, bounds.cutRepeats ? new WeakSet<object>() : undefined);
  return typeof found === 'number' ? undefined : found;
}

/**
 * The characters of strings and keys in a value within its bounds (all of them), or what is wrong
 * with it. It runs for every call a model makes, so it makes no closure, no options and no result
 * object, and the arrays of its stack only for a value that nests. `seen`, when given, is where each
 * object walked is remembered, so that a repeat is walked once (`ValueBounds.cutRepeats`).
 */
export function charsWithin(value: unknown, maxChars = Number.POSITIVE_INFINITY, maxDepth = MAX_JSON_DEPTH, seen?: WeakSet<object>): number | BoundsProblem {
  if (typeof value !== 'object' || value === null) {
    const chars = typeof value === 'string' ? value.length : 0;
    return chars > maxChars ? 'too_large' : chars;
  }
  let chars = 0;
  // Containers still to open, each beside how many containers it sits in (itself included).
  let stack: object[] | undefined;
  let depths: number[] | undefined;
  for (let node: object | undefined = value, depth = 1; node !== undefined; node = stack?.pop(), depth = depths?.pop() ?? 0) {
    if (depth > maxDepth) return 'too_deep';
    if (seen) {
      if (seen.has(node)) continue;
      seen.add(node);
    }
    const keys = Array.isArray(node) ? undefined : Object.keys(node);
    const count = keys ? keys.length : (node as unknown[]).length;
    for (let index = 0; index < count; index += 1) {
      let item: unknown;
      if (keys) {
        const key = keys[index] as string;
        chars += key.length;
        item = (node as Record<string, unknown>)[key];
      } else item = (node as unknown[])[index];
      if (typeof item === 'string') chars += item.length;
      else if (typeof item === 'object' && item !== null) {
        (stack ??= []).push(item);
        (depths ??= []).push(depth + 1);
      }
    }
    if (chars > maxChars) return 'too_large';
  }
  return chars;
}
