import type { WebSocket } from 'ws';

/** A server going away (WebSocket "going away"). */
export const CLOSE_GOING_AWAY = 1001;

/** The open sockets of one endpoint, closed together when the server stops. */
export interface WsClients {
  /** Keeps the socket until it closes; false (and closed with 1001) once the endpoint stopped. */
  admit(ws: WebSocket): boolean;
  readonly size: number;
  /** Closes every socket with 1001 and admits none after. False when it had stopped already. */
  stop(): boolean;
}

export function createWsClients(): WsClients {
  const clients = new Set<WebSocket>();
  let stopped = false;
  return {
    admit: (ws) => {
      if (stopped) {
        ws.close(CLOSE_GOING_AWAY, 'server shutting down');
        return false;
      }
      clients.add(ws);
      ws.once('close', () => clients.delete(ws));
      return true;
    },
    get size() {
      return clients.size;
    },
    stop: () => {
      if (stopped) return false;
      stopped = true;
      for (const ws of clients) ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      return true;
    },
  };
}
