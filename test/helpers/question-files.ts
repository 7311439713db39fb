import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Script } from '../../src/engines/scripted.js';
import { defineHumanTool } from '../../src/index.js';

/** The answer schema of the tools file's question: a city, a number of nights, a room kind and breakfast or not. */
export const BOOKING_ANSWER = JSON.parse(readFileSync(new URL('../dashboard/fixtures/booking-answer.json', import.meta.url), 'utf8')) as Record<string, unknown>;

/**
 * A tools file with a question as a tools file declares one (docs/protocol.md, Questions for a human): `ask_booking`
 * (`human: {answer}`, no `execute`), next to `echo`; and a script in which the model asks it (`call_q`), then answers.
 */
export function writeQuestionFiles(dir: string): { readonly tools: string; readonly script: string } {
  const tools = join(dir, 'question-tools.mjs');
  writeFileSync(
    tools,
    `export default [
  {
    name: 'ask_booking',
    description: 'Asks the user where and how long to stay.',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
    human: { answer: ${JSON.stringify(BOOKING_ANSWER)} },
  },
  { name: 'echo', description: 'echoes', parameters: { type: 'object', properties: { text: { type: 'string' } } }, execute: (args) => ({ text: args.text }) },
];\n`,
  );
  const script = join(dir, 'question-script.json');
  const responses = [{ text: 'Let me ask.', tool_calls: [{ id: 'call_q', name: 'ask_booking', arguments: { question: 'Where to?' } }] }, { text: 'Booked.' }];
  writeFileSync(script, JSON.stringify({ responses }));
  return { tools, script };
}

/** An answer the schema accepts. */
export const GOOD_ANSWER = { city: 'Lyon', nights: 2, room: 'double', breakfast: true };

/** Per conversation: a question and an echo in one inference, then an answer. */
export const COLOR_SCRIPT: Script = {
  responses: [
    {
      text: 'I need to know.',
      tool_calls: [
        { id: 'call_q', name: 'ask_color', arguments: { question: 'Which color?' } },
        { id: 'call_echo', name: 'echo', arguments: { text: 'hi' } },
      ],
    },
    { text: 'Painted.' },
  ],
};

export const askColor = defineHumanTool({
  name: 'ask_color',
  description: 'Asks the user for a color.',
  parameters: z.object({ question: z.string() }),
  answer: z.object({ color: z.enum(['red', 'blue']), coats: z.number().int().min(1) }),
});

