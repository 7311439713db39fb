import type { Observable, Subscription } from 'rxjs';
import type { Block } from '../../src/core/turns.js';
import { EngineError, type EngineEvent, type InferenceRequest, type ToolSpec } from '../../src/core/engine.js';

export interface Collected {
  readonly events: EngineEvent[];
  readonly error?: EngineError;
}

/** Subscribes and gathers every event until completion or error. */
export function collect(events$: Observable<EngineEvent>): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const events: EngineEvent[] = [];
    events$.subscribe({
      next: (event) => events.push(event),
      complete: () => resolve({ events }),
      error: (error: unknown) => (error instanceof EngineError ? resolve({ events, error }) : reject(error)),
    });
  });
}

/** Subscribes and resolves at the first text delta, leaving the subscription open for the test to end. */
export function untilFirstText(events$: Observable<EngineEvent>): Promise<{ subscription: Subscription; seen: EngineEvent[] }> {
  return new Promise((resolve, reject) => {
    const seen: EngineEvent[] = [];
    let resolved = false;
    const subscription: Subscription = events$.subscribe({
      next: (event) => {
        seen.push(event);
        if (event.type === 'text-delta' && !resolved) {
          resolved = true;
          // The subscription variable is assigned once subscribe returns; defer to read it.
          queueMicrotask(() => resolve({ subscription, seen }));
        }
      },
      error: reject,
      complete: () => reject(new Error('completed before any text delta')),
    });
  });
}

export const textOf = (events: readonly EngineEvent[]) =>
  events.flatMap((e) => (e.type === 'text-delta' ? [e.delta] : [])).join('');
export const reasoningOf = (events: readonly EngineEvent[]) =>
  events.flatMap((e) => (e.type === 'reasoning-delta' ? [e.delta] : [])).join('');
export const callsOf = (events: readonly EngineEvent[]) => events.filter((e) => e.type === 'tool-call');
export const finishedOf = (events: readonly EngineEvent[]) => events.find((e) => e.type === 'finished');

export const weatherTool: ToolSpec = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city'],
    additionalProperties: false,
  },
};

export const clockTool: ToolSpec = {
  name: 'clock',
  description: 'The current time',
  parameters: { type: 'object', properties: {} },
};

let n = 0;
const block = <B extends Block>(b: Omit<B, 'id'>): B => ({ id: `b${++n}`, ...b }) as B;

export const firstStep: readonly Block[] = [
  block({ kind: 'system', payload: { text: 'You are terse.' } }),
  block({ kind: 'user', payload: { text: 'Weather in San Francisco and Rome?' } }),
];

/** A transcript whose previous step asked for two calls: one succeeded, one failed. */
export const afterTools: readonly Block[] = [
  ...firstStep,
  block({ kind: 'reasoning', payload: { text: 'two cities, two calls' } }),
  block({ kind: 'llm_text', payload: { text: 'Checking both.' } }),
  block({ kind: 'tool_call', payload: { id: 'call_sf', name: 'get_weather', args: { city: 'San Francisco' } } }),
  block({ kind: 'tool_call', payload: { id: 'call_rome', name: 'get_weather', args: { city: 'Rome' } } }),
  block({ kind: 'tool_use', payload: { id: 'call_sf', result: { temp_c: 14, sky: 'fog' } } }),
  block({ kind: 'tool_use', payload: { id: 'call_rome', result: null, error: 'weather service timed out' } }),
];

export function inference(blocks: readonly Block[], extra: Partial<InferenceRequest> = {}): InferenceRequest {
  return {
    conv_id: 'c1',
    session_id: 's1',
    inference_id: 'i1',
    turn_id: 't1',
    blocks,
    tools: [weatherTool],
    ...extra,
  };
}
