import type { Rng } from './seeded-rng.js';

/**
 * The hostile model of docs/protocol.md, Untrusted input (SPEC §18), as a scripted engine's script: a seeded
 * generator of responses whose tool calls carry arguments nested thousands of levels deep, megabytes of text, lone
 * surrogates, `__proto__` keys, ids that collide, thousands of calls, unknown and huge tool names, and failures.
 * `expectedRefusals` says what the server must do with each call of a response, so a test can check the frames
 * against the script, not only that the process survived.
 */

/** What the server answers a call whose arguments it refuses where they enter. */
export const TOO_DEEP = 'arguments nested too deeply';
export const TOO_LARGE = 'arguments too large';
/** The bounds the server applies to a model's arguments. */
export const MAX_DEPTH = 128;
export const MAX_ARGS_CHARS = 1024 * 1024;

/** One tool call of a scripted response, as JSON text, with what the server must do with it. */
export interface HostileCall {
  readonly name: string;
  /** The id the model gives (absent: the scripted engine makes one). */
  readonly id?: string;
  /** The `arguments` JSON text, written by repetition where it nests (JSON.stringify overflows past ~9 000 levels). */
  readonly argsJson: string;
  /** What the arguments are, for failure messages. */
  readonly label: string;
}

/** What the server must answer a call at once, where its arguments enter: refused as too deep or too large, either, or not. */
export type Refusal = typeof TOO_DEEP | typeof TOO_LARGE | 'either' | undefined;

/** The objects and arrays the deepest value of JSON text sits in: a scan of brackets outside strings. */
export function depthOf(json: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < json.length; i += 1) {
    const c = json[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === '}' || c === ']') depth -= 1;
  }
  return deepest;
}

/** Characters of the keys and strings of the arguments as the engine hands them over (`null` becomes `{}`). */
export function charsOf(json: string): number {
  const value: unknown = JSON.parse(json);
  if (typeof value === 'string') return value.length;
  let chars = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') chars += node.length;
    else if (Array.isArray(node)) stack.push(...node);
    else if (typeof node === 'object' && node !== null) {
      for (const [key, item] of Object.entries(node)) {
        chars += key.length;
        stack.push(item);
      }
    }
  }
  return chars;
}

/**
 * What the server must do with each call of one answer (docs/protocol.md, Untrusted input): a call nested deeper than
 * 128 is refused as too deep; the calls share 1 MiB of argument text, in the order they came, and one that does not
 * fit what is left is refused as too large (a refused call uses none of it); one that is both may be either.
 */
export function expectedRefusals(calls: readonly HostileCall[]): Refusal[] {
  let left = MAX_ARGS_CHARS;
  return calls.map((call) => {
    const deep = depthOf(call.argsJson) > MAX_DEPTH;
    const chars = charsOf(call.argsJson);
    const large = chars > left;
    if (deep && large) return 'either';
    if (deep) return TOO_DEEP;
    if (large) return TOO_LARGE;
    left -= chars;
    return undefined;
  });
}

/** One scripted response (docs/protocol.md, Script file), with a label for failure messages. */
export interface HostileResponse {
  readonly label: string;
  readonly reasoning?: string;
  readonly text?: string;
  readonly calls?: readonly HostileCall[];
  readonly error?: string;
  readonly delayMs?: number;
}

/** Arguments as JSON text: what they are, and whether the server must refuse them. */
interface Args {
  readonly label: string;
  readonly json: string;
}

const nested = (open: string, close: string, levels: number, inner = '1'): string => open.repeat(levels) + inner + close.repeat(levels);

/** A value inside `levels` objects. */
export const deepObject = (levels: number): Args => ({ label: `object ${levels} deep`, json: nested('{"a":', '}', levels)});
/** A value inside `levels` arrays. */
export const deepArray = (levels: number): Args => ({ label: `array ${levels} deep`, json: nested('[', ']', levels)});
/** `{"text", "nested": …}`: a value inside `levels` objects and arrays in all, alternating. */
function deepMixed(levels: number): Args {
  let open = '{"text":"mixed","nested":';
  let close = '}';
  for (let depth = 2; depth <= levels; depth += 1) {
    open += depth % 2 === 0 ? '[' : '{"k":';
    close = (depth % 2 === 0 ? ']' : '}') + close;
  }
  return { label: `mixed ${levels} deep`, json: `${open}1${close}`};
}

/** `{"text": "xxx…"}`: 4 characters of key plus `length` of string. */
function hugeString(length: number): Args {
  return { label: `string of ${length} chars`, json: `{"text":"${'x'.repeat(length)}"}` };
}

/** An object with `count` keys of `keyLength` characters each (keys count toward the size too). */
function wideObject(count: number, keyLength: number): Args {
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) keys.push(`"${String(i).padStart(keyLength, 'k')}":${i}`);
  return { label: `${count} keys of ${keyLength} chars`, json: `{${keys.join(',')}}` };
}

/** What a model may say besides its calls: right-to-left marks, joiners, combining marks, NULs, lone surrogates. */
export const ODD_TEXTS: readonly string[] = [
  'plain words, then more words.',
  '\u202eevil\u202c right-to-left \u200f mark and \u2066isolate\u2069',
  'family 👨\u200d👩\u200d👧\u200d👦 flags 🇫🇷🇯🇵 skin 👋🏿',
  'Z\u0351\u0352\u0357a\u035b\u0346l\u0350g\u0346o combining\u0300\u0301\u0302',
  'nul \u0000 bell \u0007 escape \u001b[31mred\u001b[0m',
  'line\u2028separator\u2029paragraph',
  'lone \ud800 high and \udfff low and reversed \udc00\ud800',
  '</script><script>alert(1)</script> {{template}} ${dollar}',
  '\ufeffbom \ufffe \uffff noncharacters',
  `${'a'.repeat(20_000)} one long word`,
];

/** The tools of the tools file (`writeHostileTools`), by what they do. */
export const TOOL_NAMES = ['echo', 'mirror', 'gate', 'picky', 'boom', 'slow', 'deep_result', 'ask_booking'] as const;
/** Names no tool has, some of them properties every object has. */
export const UNKNOWN_NAMES: readonly string[] = ['no_such_tool', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'echo ', 'ec\u0000ho', '\ud800', 'x'.repeat(10_000)];

/** Arguments for a call, hostile with probability `hostility`. */
function argsFor(rng: Rng, name: string): Args {
  const levels = rng.pick([100, 128, 129, 200, 1000, 5000]);
  const plain: Args =
    name === 'ask_booking'
      ? { label: 'a question', json: JSON.stringify({ question: rng.pick(ODD_TEXTS.slice(0, 9)) }) }
      : name === 'deep_result'
        ? { label: `a result ${levels} deep`, json: JSON.stringify({ levels }) }
        : { label: 'plain text', json: JSON.stringify({ text: rng.pick(ODD_TEXTS.slice(0, 9)) }) };
  return rng.weighted<() => Args>([
    [30, () => plain],
    [4, () => deepObject(rng.pick([100, 127, 128, 129, 130, 3000]))],
    [3, () => deepArray(rng.pick([100, 128, 129, 3000]))],
    [3, () => deepMixed(rng.pick([64, 128, 129, 500]))],
    [2, () => hugeString(rng.pick([100_000, 600_000]))],
    [3, () => ({ label: 'lone surrogates', json: '{"text":"\\ud800 lone \\udfff low \\udc00\\ud800 reversed \\ud83d","question":"\\udbff?"}' })],
    [
      3,
      () => ({
        label: '__proto__, constructor and prototype keys',
        json: '{"__proto__":{"polluted":"yes","text":"proto"},"constructor":{"prototype":{"polluted":"yes"}},"prototype":1,"text":"keys","question":"proto?"}',
      }),
    ],
    [
      3,
      () => ({
        label: 'odd numbers',
        json: '{"text":"numbers","big":1e308,"negzero":-0,"tiny":5e-324,"over":1e400,"under":-1e400,"long":123456789012345678901234567890,"n":-0.0}',
      }),
    ],
    [2, () => ({ label: 'not an object', json: rng.pick(['"just a string"', 'null', '[1,2,3]', '42', 'true', '{}', '[]']) })],
    [2, () => ({ label: 'NUL and control characters', json: '{"text":"\\u0000\\u0001\\u001f\\u007f\\u2028\\u2029\\ufeff\\uffff","question":"\\u0000"}' })],
    [1, () => wideObject(rng.pick([1000, 10_000]), 8)],
  ])();
}

/** The id a call is given: mostly fresh, else one that collides or that the server must replace. */
function idFor(rng: Rng, earlier: readonly string[], sameResponse: readonly string[], responseIndex: number): string | undefined {
  return rng.weighted<() => string | undefined>([
    [25, () => undefined],
    [40, () => `c${responseIndex}_${rng.int(0, 1e9).toString(36)}`],
    [5, () => (sameResponse.length > 0 ? rng.pick(sameResponse) : '__proto__')],
    [5, () => (earlier.length > 0 ? rng.pick(earlier) : 'constructor')],
    // The id the scripted engine gives the first call of the first response.
    [2, () => 'call_1_1'],
    [6, () => rng.pick(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', ''])],
    [4, () => rng.pick(['x'.repeat(256), 'x'.repeat(257), 'y'.repeat(10_000)])],
    [3, () => rng.pick(['\ud800', 'id with "quotes" and \\ backslash', '👨\u200d👩\u200d👧', ' '])],
  ])();
}

/** A name a call names: mostly the tools file's, some unknown. */
const nameFor = (rng: Rng): string =>
  rng.weighted<string>([
    [30, 'echo'],
    [12, 'mirror'],
    [8, 'gate'],
    [12, 'ask_booking'],
    [4, 'picky'],
    [4, 'boom'],
    [4, 'slow'],
    [2, 'deep_result'],
    [6, rng.pick(UNKNOWN_NAMES)],
  ]);

/** Builds calls one by one, each with its id chosen against the ids before it. */
class CallMaker {
  readonly earlier: string[] = [];
  constructor(private readonly rng: Rng) {}

  calls(responseIndex: number, count: number, args?: () => Args, name?: () => string): HostileCall[] {
    const made: HostileCall[] = [];
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const callName = name ? name() : nameFor(this.rng);
      const chosen = args ? args() : argsFor(this.rng, callName);
      const id = idFor(this.rng, this.earlier, ids, responseIndex);
      if (id !== undefined) ids.push(id);
      made.push({ name: callName, ...(id === undefined ? {} : { id }), argsJson: chosen.json, label: chosen.label });
    }
    this.earlier.push(...ids);
    return made;
  }
}

export interface ScriptOptions {
  /** Responses in all (at least the must-haves). */
  readonly responses: number;
  /** The largest calls and values: off for a smaller script (the Redis service). Default true. */
  readonly heavy?: boolean;
}

/**
 * A hostile script: every case of SPEC §18 once (deep, huge, wide, many calls, colliding ids, errors), then random
 * responses, shuffled; about one in four ends a run (text only, an error, nothing).
 */
export function hostileResponses(rng: Rng, options: ScriptOptions): HostileResponse[] {
  const heavy = options.heavy ?? true;
  const maker = new CallMaker(rng);
  type Make = (index: number) => HostileResponse;
  const one = (args: Args, name = 'echo'): Make => (index) => ({ label: `${name} with ${args.label}`, text: 'one call', calls: maker.calls(index, 1, () => args, () => name) });
  const mustHave: Make[] = [
    one(deepObject(128)),
    one(deepObject(129)),
    one(deepArray(3000), 'mirror'),
    one(deepObject(heavy ? 50_000 : 5000), 'ask_booking'),
    one(deepMixed(128), 'mirror'),
    one(hugeString(MAX_ARGS_CHARS - 4)),
    one(hugeString(MAX_ARGS_CHARS - 3)),
    one(hugeString(heavy ? 2_000_000 : 1_200_000), 'gate'),
    one(wideObject(10_000, 8), 'mirror'),
    one(wideObject(20_000, 60)),
    (index) => ({ label: 'a question beside a call 3 000 deep', text: 'asking', calls: [...maker.calls(index, 1, undefined, () => 'ask_booking'), ...maker.calls(index, 1, () => deepObject(3000))] }),
    (index) => ({ label: 'the same id twice in one response', calls: [{ name: 'echo', id: 'twice', argsJson: '{"text":"1"}', label: 'plain' }, { name: 'gate', id: 'twice', argsJson: '{"text":"2"}', label: 'plain' }, ...maker.calls(index, 1)] }),
    (index) => ({ label: 'ids __proto__, constructor, empty and 10 000 chars', calls: ['__proto__', 'constructor', '', 'z'.repeat(10_000)].map((id, i): HostileCall => ({ name: i % 2 === 0 ? 'echo' : 'ask_booking', id, argsJson: '{"text":"t","question":"q"}', label: `id ${id.slice(0, 12)}` })).concat(maker.calls(index, 1)) }),
    (index) => ({ label: `${heavy ? 3000 : 600} calls in one response`, text: 'many', calls: maker.calls(index, heavy ? 3000 : 600, () => ({ label: 'plain', json: '{"text":"m"}' }), () => rng.weighted<string>([[20, 'echo'], [2, 'gate'], [1, 'mirror'], [1, 'ask_booking'], [1, 'no_such_tool']])) }),
    (index) => ({ label: '1 000 calls, each hostile', calls: maker.calls(index, heavy ? 1000 : 200) }),
    (index) => ({ label: 'unknown and huge tool names', calls: UNKNOWN_NAMES.map((name): HostileCall => ({ name, argsJson: '{"text":"u"}', label: `name ${name.slice(0, 12)}` })).concat(maker.calls(index, 1)) }),
    () => ({ label: 'an engine error', reasoning: rng.pick(ODD_TEXTS), error: rng.pick(['scripted failure', 'failure with \ud800 and \u0000', 'x'.repeat(50_000)]) }),
    () => ({ label: 'reasoning and text in odd Unicode', reasoning: ODD_TEXTS.join(' '), text: rng.pick(ODD_TEXTS) }),
    () => ({ label: `a text of ${heavy ? '2 MB' : '300 KB'} in one word`, text: 'y'.repeat(heavy ? 2_000_000 : 300_000) }),
  ];
  const random: Make = (index) =>
    rng.weighted<() => HostileResponse>([
      [14, () => ({ label: 'text only', text: rng.pick(ODD_TEXTS) })],
      [4, () => ({ label: 'reasoning then text', reasoning: rng.pick(ODD_TEXTS), text: rng.pick(ODD_TEXTS) })],
      [3, () => ({ label: 'an engine error', error: rng.pick(ODD_TEXTS.slice(0, 9)) })],
      [2, () => ({ label: 'an empty response' })],
      [3, () => ({ label: 'a slow response', delayMs: rng.int(50, 400), text: 'slow', calls: maker.calls(index, rng.int(0, 2)) })],
      [50, () => ({ label: 'tool calls', ...(rng.chance(0.5) ? { text: rng.pick(ODD_TEXTS) } : {}), ...(rng.chance(0.2) ? { reasoning: rng.pick(ODD_TEXTS) } : {}), calls: maker.calls(index, rng.int(1, 5)) })],
      [3, () => ({ label: 'tens of calls', calls: maker.calls(index, rng.int(20, 60)) })],
    ])();
  const makers = rng.shuffle([...mustHave, ...Array.from({ length: Math.max(0, options.responses - mustHave.length) }, () => random)]);
  return makers.map((make, index) => make(index));
}

/** The script file's text (docs/protocol.md, Script file): arguments as written, never through JSON.stringify. */
export function scriptText(responses: readonly HostileResponse[], chunkDelayMs = 0): string {
  const response = (r: HostileResponse): string => {
    const fields: string[] = [];
    if (r.reasoning !== undefined) fields.push(`"reasoning":${JSON.stringify(r.reasoning)}`);
    if (r.text !== undefined) fields.push(`"text":${JSON.stringify(r.text)}`);
    if (r.delayMs !== undefined) fields.push(`"delay_ms":${r.delayMs}`);
    if (r.error !== undefined) fields.push(`"error":${JSON.stringify(r.error)}`);
    if (r.calls !== undefined) {
      const calls = r.calls.map((call) => `{${call.id === undefined ? '' : `"id":${JSON.stringify(call.id)},`}"name":${JSON.stringify(call.name)},"arguments":${call.argsJson}}`);
      fields.push(`"tool_calls":[${calls.join(',')}]`);
    }
    return `{${fields.join(',')}}`;
  };
  return `{"chunk_delay_ms":${chunkDelayMs},"responses":[\n${responses.map(response).join(',\n')}\n]}`;
}
