import { z } from 'zod';
import type { Script, ScriptedResponse } from '../engines/scripted.js';
import { defineTool, type Tool } from '../tools/define-tool.js';

/** Resolves after `ms`, or rejects when the run is cancelled or the call times out. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason as Error)), { once: true });
  });
}

const CONDITIONS = ['sunny', 'cloudy', 'light rain', 'windy', 'foggy', 'clear skies'];

/** Deterministic per city, so a replayed demo shows the same weather. */
function weatherOf(city: string): { city: string; temperature_c: number; conditions: string } {
  const hash = [...city.toLowerCase()].reduce((sum, char) => (sum * 31 + char.charCodeAt(0)) >>> 0, 7);
  return { city, temperature_c: (hash % 30) - 2, conditions: CONDITIONS[hash % CONDITIONS.length] ?? 'sunny' };
}

/** `+ - * / ( )` and decimals only: a tiny recursive-descent parser, never `eval`. */
export function calculate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/()]/g) ?? [];
  if (tokens.join('') !== expression.replace(/\s+/g, '')) throw new Error(`unsupported characters in "${expression}"`);
  let at = 0;
  const peek = (): string | undefined => tokens[at];
  const factor = (): number => {
    const token = tokens[at++];
    if (token === '-') return -factor();
    if (token === '(') {
      const value = sum();
      if (tokens[at++] !== ')') throw new Error('missing ")"');
      return value;
    }
    if (token === undefined || !/^\d/.test(token)) throw new Error(`unexpected "${token ?? 'end'}"`);
    return Number(token);
  };
  const product = (): number => {
    let value = factor();
    while (peek() === '*' || peek() === '/') value = tokens[at++] === '*' ? value * factor() : value / factor();
    return value;
  };
  const sum = (): number => {
    let value = product();
    while (peek() === '+' || peek() === '-') value = tokens[at++] === '+' ? value + product() : value - product();
    return value;
  };
  const value = sum();
  if (at !== tokens.length) throw new Error(`unexpected "${tokens[at]}"`);
  return value;
}

/** The demo tools: slow enough to watch, quick enough to step through. */
export function createDemoTools(): Tool[] {
  return [
    defineTool({
      name: 'get_weather',
      description: 'Current weather for a city.',
      parameters: z.object({ city: z.string().min(1).describe('City name, e.g. Paris') }),
      execute: async ({ city }, { signal }) => (await sleep(400, signal), weatherOf(city)),
    }),
    defineTool({
      name: 'calculator',
      description: 'Evaluates an arithmetic expression with + - * / and parentheses.',
      parameters: z.object({ expression: z.string().min(1).max(200) }),
      execute: async ({ expression }, { signal }) => (await sleep(150, signal), { expression, value: calculate(expression) }),
    }),
    defineTool({
      name: 'search',
      description: 'Searches a small offline knowledge base.',
      parameters: z.object({ query: z.string().min(1), limit: z.number().int().min(1).max(5).default(3) }),
      execute: async ({ query, limit }, { signal }) => {
        await sleep(600, signal);
        const results = ['overview', 'history', 'latest news', 'how it works', 'common questions'].map((topic, i) => ({
          title: `${query}: ${topic}`,
          url: `https://example.org/${encodeURIComponent(query.toLowerCase())}/${i + 1}`,
        }));
        return { query, results: results.slice(0, limit) };
      },
    }),
  ];
}

const CITIES = ['Paris', 'Lisbon', 'Tokyo', 'Nairobi', 'Montreal', 'Oslo', 'Lima', 'Seoul'];

/** One demo run: a tool request (two in parallel on some), then an answer that uses the results. */
function demoRun(i: number): ScriptedResponse[] {
  const city = CITIES[i % CITIES.length] ?? 'Paris';
  const other = CITIES[(i + 3) % CITIES.length] ?? 'Oslo';
  switch (i % 3) {
    case 0:
      return [
        { text: `Let me check the weather in ${city} and ${other}.`, tool_calls: [{ name: 'get_weather', arguments: { city } }, { name: 'get_weather', arguments: { city: other } }], delay_ms: 300 },
        { text: `Here is what I found: ${city} and ${other} are both reported above. Pack accordingly!`, delay_ms: 200 },
      ];
    case 1:
      return [
        { text: 'I will work that out with the calculator.', tool_calls: [{ name: 'calculator', arguments: { expression: `(${i + 12} * 7) / 3 + 4` } }], delay_ms: 300 },
        { text: 'Now a quick search to double-check the context.', tool_calls: [{ name: 'search', arguments: { query: `${city} travel`, limit: 2 } }], delay_ms: 250 },
        { text: `Done: the calculation and the search results are above. Anything else about ${city}?`, delay_ms: 200 },
      ];
    default:
      return [
        { text: `Searching for recent notes on ${city}.`, tool_calls: [{ name: 'search', arguments: { query: city } }], delay_ms: 300 },
        { text: `The top results for ${city} are listed above; the first one is a good overview.`, delay_ms: 200 },
      ];
  }
}

/** The built-in demo script: enough responses for a hundred runs per conversation. */
export function createDemoScript(runs = 100): Script {
  return { responses: Array.from({ length: runs }, (_, i) => demoRun(i)).flat(), chunk_delay_ms: 40 };
}
