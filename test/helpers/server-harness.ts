import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { createScriptedEngine, type Script } from '../../src/engines/scripted.js';
import { createServer, type ServerOptions, type StepwiseHttpServer as StepwiseServer } from '../../src/server/app.js';
import type { StepwiseConfig } from '../../src/sessions/runtime.js';
import { defineTool, type Tool } from '../../src/tools/define-tool.js';

/** Fast, deterministic tools for wire tests. */
export function createTestTools(): Tool[] {
  return [
    defineTool({
      name: 'add',
      description: 'Adds two numbers.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => ({ sum: a + b }),
    }),
    defineTool({
      name: 'echo',
      description: 'Echoes its text.',
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => ({ text }),
    }),
  ];
}

/** Per run: one `add` call, then an answer. Repeated so one conversation can run many times. */
export function toolThenAnswer(runs = 20, chunk_delay_ms = 0): Script {
  const responses = Array.from({ length: runs }, (_, i) => [
    { text: 'Adding two numbers.', tool_calls: [{ id: `call_${i}_a`, name: 'add', arguments: { a: i, b: 2 } }] },
    { text: `The sum is ${i + 2}. Done.` },
  ]).flat();
  return { responses, chunk_delay_ms };
}

export interface TestServer {
  readonly server: StepwiseServer;
  readonly base: string;
  readonly wsBase: string;
  close(): Promise<void>;
}

export interface TestServerOptions extends Omit<ServerOptions, 'runtime'> {
  readonly script?: Script;
  readonly runtime?: Partial<StepwiseConfig>;
}

/** A real server on 127.0.0.1, port 0, with the scripted engine and the test tools. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { script = toolThenAnswer(), runtime = {}, ...rest } = options;
  const server = createServer({
    ...rest,
    runtime: { engine: createScriptedEngine(script), tools: createTestTools(), ...runtime },
  });
  await new Promise<void>((resolve) => server.http.listen(0, '127.0.0.1', resolve));
  const { port } = server.http.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}`, wsBase: `ws://127.0.0.1:${port}`, close: () => server.close() };
}

export interface Reply<T = any> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

/** Real HTTP through fetch; the body is parsed as JSON when it is JSON. */
export async function request(base: string, method: string, path: string, body?: unknown, token?: string): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const response = await fetch(base + path, { method, headers, ...(payload === undefined ? {} : { body: payload }) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (the dashboard page): keep the text.
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

export const post = (base: string, path: string, body?: unknown, token?: string): Promise<Reply> => request(base, 'POST', path, body, token);
export const get = (base: string, path: string, token?: string): Promise<Reply> => request(base, 'GET', path, undefined, token);
