import { Agent, request } from 'node:http';

/**
 * POSTs a JSON body with node:http on a keep-alive connection and resolves with the status and the
 * parsed reply. The latency figures post with it rather than `fetch`: on this kind of machine
 * undici's own per-request work is a large part of a sub-millisecond round trip, and it is the
 * client's cost, not the server's (bench/HISTORY.md has the figures with both).
 */
export function createJsonPoster(base: string): { post(path: string, body: unknown): Promise<{ status: number; body: any }>; close(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const post = (path: string, body: unknown): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const outgoing = request(`${base}${path}`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (reply) => {
        let text = '';
        reply.setEncoding('utf8');
        reply.on('data', (chunk: string) => (text += chunk));
        reply.on('end', () => resolve({ status: reply.statusCode ?? 0, body: text === '' ? undefined : JSON.parse(text) }));
        reply.on('error', reject);
      });
      outgoing.on('error', reject);
      outgoing.end(JSON.stringify(body));
    });
  return { post, close: () => agent.destroy() };
}
