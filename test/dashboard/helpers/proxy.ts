import { createServer, connect, type Socket } from 'node:net';

/**
 * A TCP relay between the browser and the server. Cutting its sockets is, for the page, exactly a
 * connection the server side dropped (an abnormal close, code 1006), with no hook in the page.
 */
export interface Relay {
  readonly url: string;
  setTarget(port: number): void;
  /** Resets every open connection. */
  dropAll(): void;
  /** While blocked, new connections are reset at once, as if the server were unreachable. */
  block(): void;
  unblock(): void;
  close(): Promise<void>;
}

export async function startRelay(): Promise<Relay> {
  let targetPort = 0;
  let blocked = false;
  const pairs = new Set<[Socket, Socket]>();

  const server = createServer((client) => {
    if (blocked || targetPort === 0) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay has no port');

  const relay: Relay = {
    url: `http://127.0.0.1:${address.port}`,
    setTarget(port) {
      targetPort = port;
    },
    dropAll() {
      for (const [client, upstream] of [...pairs]) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    block() {
      blocked = true;
    },
    unblock() {
      blocked = false;
    },
    close() {
      relay.dropAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return relay;
}
