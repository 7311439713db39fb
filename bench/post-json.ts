import { Agent, request } from 'node:http';

export interface JsonReply {
  readonly status: number;
  readonly body: any;
}

/**
 * A JSON client over `connections` keep-alive sockets of node:http. The latency figures post with it
 * rather than `fetch`: on this kind of machine undici's own per-request work is a large part of a
 * sub-millisecond round trip, and it is the client's cost, not the server's (bench/HISTORY.md has the
 * figures with both).
 */
export function createJsonClient(base: string, connections: number): { send(method: string, path: string, body?: unknown): Promise<JsonReply>; close(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const send = (method: string, path: string, body?: unknown): Promise<JsonReply> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers = payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
      const req = request(`${base}${path}`, { method, agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text === '' ? undefined : JSON.parse(text) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  return { send, close: () => agent.destroy() };
}

/** POSTs JSON and resolves with the status and the parsed reply, on `createJsonClient`'s keep-alive sockets. */
export function createJsonPoster(base: string): { post(path: string, body: unknown): Promise<JsonReply>; close(): void } {
  const client = createJsonClient(base, 16);
  return { post: (path, body) => client.send('POST', path, body), close: client.close };
}
