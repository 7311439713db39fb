import { buildResumeArray, HttpAgent, type AgentSubscriber, type RunAgentParameters } from '@ag-ui/client';
import type { AGUIEvent, EventType, Interrupt, Message } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import { z } from 'zod';
import { defineTool, type Tool } from '../../src/tools/define-tool.js';

/** What one AG-UI run sent, as the wire carried it: every event checked against `@ag-ui/core`'s schemas. */
export interface AgUiRun {
  readonly events: AGUIEvent[];
  readonly types: string[];
  readonly last: AGUIEvent;
}

/**
 * A real `@ag-ui/client` HttpAgent on `url`, whose fetch keeps a copy of each response's SSE body, so
 * a test sees exactly what was sent (and each event is validated against the protocol's own schemas).
 */
export function createAgUiClient(url: string, threadId: string, options: { token?: string; prompt?: string } = {}) {
  const wire: AGUIEvent[][] = [];
  const fetchCopy = async (input: string, init: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    const events: AGUIEvent[] = [];
    wire.push(events);
    void response
      .clone()
      .text()
      .then((text) => events.push(...parseSse(text)), () => undefined);
    return response;
  };
  const initialMessages: Message[] = options.prompt === undefined ? [] : [{ id: `m-${threadId}`, role: 'user', content: options.prompt }];
  const agent = new HttpAgent({
    url,
    threadId,
    initialMessages,
    fetch: fetchCopy,
    ...(options.token === undefined ? {} : { headers: { authorization: `Bearer ${options.token}` } }),
  });
  /** Runs the agent once; resolves with what the wire carried for that run. */
  const run = async (parameters?: RunAgentParameters, subscriber?: AgentSubscriber): Promise<AgUiRun> => {
    const before = wire.length;
    await agent.runAgent(parameters, subscriber);
    // The copy is read to its end once the client has read the original.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const events = wire[before] ?? [];
    const last = events.at(-1);
    if (!last) throw new Error('the AG-UI run sent no event');
    return { events, types: events.map((event) => event.type), last };
  };
  /** Answers every pending interrupt: `answer(interrupt)` gives its payload, or `'cancel'`. */
  const resume = (answer: (interrupt: Interrupt) => unknown): Promise<AgUiRun> => {
    const responses = Object.fromEntries(
      agent.pendingInterrupts.map((interrupt) => {
        const payload = answer(interrupt);
        return [interrupt.id, payload === 'cancel' ? { status: 'cancelled' as const } : { status: 'resolved' as const, payload }];
      }),
    );
    return run({ resume: buildResumeArray(agent.pendingInterrupts, responses) });
  };
  const say = (text: string): void => agent.addMessage({ id: `m-${Math.random().toString(36).slice(2)}`, role: 'user', content: text });
  return { agent, run, resume, say };
}

/** The `data:` lines of an SSE body, each a JSON AG-UI event, validated with `@ag-ui/core`'s `EventSchema`. */
export function parseSse(text: string): AGUIEvent[] {
  return text
    .split('\n\n')
    .map((block) => block.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n'))
    .filter((data) => data !== '')
    .map((data) => {
      const event = JSON.parse(data) as unknown;
      EventSchema.parse(event);
      return event as AGUIEvent;
    });
}

/** One event of a type from a run, typed. */
export function eventOf<T extends EventType>(run: AgUiRun, type: T): Extract<AGUIEvent, { type: T }> {
  const found = run.events.find((event) => event.type === type);
  if (!found) throw new Error(`no ${type} in ${run.types.join(', ')}`);
  return found as Extract<AGUIEvent, { type: T }>;
}

/** The tools of these tests, each recording what ran with which arguments. */
export function createLoggedTools(log: { name: string; args: unknown }[]): Tool[] {
  return [
    defineTool({
      name: 'add',
      description: 'Adds two numbers.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: (args) => (log.push({ name: 'add', args }), { sum: args.a + args.b }),
    }),
    defineTool({
      name: 'echo',
      description: 'Echoes its text.',
      parameters: z.object({ text: z.string() }),
      execute: (args) => (log.push({ name: 'echo', args }), { text: args.text }),
    }),
  ];
}
