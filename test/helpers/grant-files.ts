import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { post } from './server-harness.js';
import { SemClient } from './server-ws-client.js';

/**
 * A tools file and a script for grant tests through the CLI: per conversation the model calls `echo` (grantable),
 * then `guarded` (a tools-file tool with `grantable: false`), then answers.
 */
export function writeGrantFiles(dir: string): { readonly tools: string; readonly script: string } {
  const tools = join(dir, 'grant-tools.mjs');
  writeFileSync(
    tools,
    `export default [
  { name: 'echo', description: 'echoes', parameters: { type: 'object', properties: { text: { type: 'string' } } }, execute: (args) => ({ text: args.text }) },
  { name: 'guarded', description: 'always asks', grantable: false, parameters: { type: 'object', properties: {} }, execute: () => 'guarded ran' },
];\n`,
  );
  const script = join(dir, 'grant-script.json');
  const responses = [
    { tool_calls: [{ id: 'call_e', name: 'echo', arguments: { text: 'hi' } }] },
    { tool_calls: [{ id: 'call_g', name: 'guarded', arguments: {} }] },
    { text: 'All done.' },
  ];
  writeFileSync(script, JSON.stringify({ responses }));
  return { tools, script };
}

/** Starts a run in step mode with a client joined first (as `/chat` does on any instance of a service). */
export async function chatStepping(base: string, wsBase: string, conv: string, token?: string): Promise<SemClient> {
  const ws = await SemClient.connect(`${wsBase}/ws?conv_id=${conv}${token ? `&access_token=${token}` : ''}`);
  expect((await post(base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } }, token)).status).toBe(200);
  return ws;
}

/** The next `after_inference` pause: the approval a grant is about; `after_tools` pauses on the way are continued. */
export async function nextApproval(base: string, ws: SemClient, token?: string): Promise<any> {
  for (;;) {
    const pause = await ws.next('debugger.pause');
    if (pause.phase === 'after_inference') return pause;
    expect((await post(base, '/debug/continue', { pause_id: pause.pause_id }, token)).status).toBe(200);
  }
}
