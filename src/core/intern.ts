/**
 * One copy of each recent string: the many strings a server builds the same (a pause's summary names
 * the tools it waits for, and a paused agent's pauses mostly name the same ones) then share it for as
 * long as they are held, which for a hibernated pause may be days. At most `limit` strings are
 * remembered; past it the memory starts over, so a stream of distinct strings costs nothing lasting.
 */
export function createInterner(limit: number): (text: string) => string {
  let seen = new Map<string, string>();
  return (text) => {
    const known = seen.get(text);
    if (known !== undefined) return known;
    if (seen.size >= limit) seen = new Map();
    seen.set(text, text);
    return text;
  };
}
