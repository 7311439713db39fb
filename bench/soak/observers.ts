import { WebSocket } from 'ws';
import type { Service } from './service.js';

/** What an observer kept of each sequenced frame: enough to compare with `/hydrate`. */
export interface SeenFrame {
  readonly seq: number;
  readonly type: string;
  readonly id: string;
}

export interface Observer {
  readonly conv_id: string;
  readonly frames: SeenFrame[];
  /** Gaps and duplicates, as they arrived. */
  readonly issues: string[];
  /** Connections made (the first, one planned hop, reconnections after a close): where, from which seq, when. */
  readonly connections: { readonly instance: number; readonly since_seq: number; readonly at: number }[];
  ended: boolean;
}

/**
 * One WebSocket observer (a real `ws` client): follows one conversation on an instance that does
 * not own it, from `since_seq=0`. After the first `debugger.resume` it hops once to another
 * non-owner with `since_seq` = the last seq it got, and whenever its socket closes under it (its
 * instance killed, Redis gone, 1013) it reconnects the same way: docs/protocol.md, "WebSocket",
 * promises no gap and no duplicate across such reconnections. It stops at `run.end`.
 */
export function follow(service: Service, convId: string): Observer & { stop(): void } {
  const observer: Observer = { conv_id: convId, frames: [], issues: [], connections: [], ended: false };
  let last = 0;
  let hopped = false;
  let stopped = false;
  let current: WebSocket | undefined;
  let failures = 0;

  const receive = (frame: SeenFrame): void => {
    if (frame.seq <= last) {
      observer.issues.push(`duplicate: seq ${frame.seq} (${frame.type}) after seq ${last}`);
      return;
    }
    if (frame.seq > last + 1) observer.issues.push(`gap: seq ${frame.seq} (${frame.type}) after seq ${last}`);
    observer.frames.push(frame);
    last = frame.seq;
    failures = 0;
    if (frame.type === 'run.end') {
      observer.ended = true;
      close();
    } else if (frame.type === 'debugger.resume' && !hopped) {
      hopped = true;
      connect();
    }
  };

  /** Closes the current socket; what it still delivers is ignored (the next one replays from `last`). */
  const close = (): void => {
    const socket = current;
    current = undefined;
    socket?.removeAllListeners('message');
    socket?.on('error', () => undefined);
    socket?.terminate();
  };

  const connect = (): void => {
    close();
    if (stopped || observer.ended) return;
    let instance: ReturnType<Service['pick']>;
    try {
      // Not the owner, and on a hop not the instance it was on (when a third one is alive).
      instance = service.pick(service.owners.get(convId), observer.connections.at(-1)?.instance);
    } catch {
      setTimeout(connect, 200);
      return;
    }
    const socket = new WebSocket(`${instance.wsBase}/ws?conv_id=${encodeURIComponent(convId)}&since_seq=${last}`);
    current = socket;
    observer.connections.push({ instance: instance.index, since_seq: last, at: Date.now() });
    socket.on('message', (data) => {
      const event = (JSON.parse(String(data)) as { event?: { type: string; id: string; seq?: number } }).event;
      if (event && typeof event.seq === 'number') receive({ seq: event.seq, type: event.type, id: event.id });
    });
    // A refused upgrade (503 while Redis is away) is an error then a close; both end here.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (current !== socket) return;
      current = undefined;
      failures += 1;
      setTimeout(connect, Math.min(1000, 50 * 2 ** failures));
    });
  };

  connect();
  return Object.assign(observer, {
    stop: () => {
      stopped = true;
      close();
    },
  });
}
