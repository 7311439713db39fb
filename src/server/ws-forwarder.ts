import type { Duplex } from 'node:stream';
import type { Subscription } from 'rxjs';
import { WebSocket, type RawData } from 'ws';
import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { FrameEncoder } from './frame-encoder.js';
import type { SequencedEvent } from '../streams/events.js';
import { appendTextFrame, createFrameList, encodeTextFrame, framesOf, type FrameList } from './ws-wire.js';

export interface ForwarderConfig {
  /** Bytes a client may have waiting (ours plus the socket's) before it is closed with 1013. Default 8 MiB. */
  readonly maxBufferedBytes?: number;
}

const DEFAULT_FORWARDER_CONFIG = Object.freeze({ maxBufferedBytes: 8 * 1024 * 1024 });

/** SPEC §3: a slow client is told to come back later (and reconnect with `since_seq`). */
export const CLOSE_TRY_AGAIN_LATER = 1013;
export const CLOSE_GOING_AWAY = 1001;

export interface ClientJoin {
  readonly session: Session;
  /** Replay from here; without it the client gets live frames after `ws.hello`'s `last_seq`. */
  readonly sinceSeq?: number;
}

/** Forwards the hub's frames to WebSocket clients, each with a bounded send buffer. */
export interface WsForwarder {
  /** Takes over an upgraded socket: sends `ws.hello`, then (replayed and) live frames. */
  attach(ws: WebSocket, socket: Duplex, join: ClientJoin): void;
  readonly clientCount: number;
  /** Flushes what is queued, closes every client with 1001 and stops. Idempotent. */
  dispose(): void;
}

/** One conversation's frames of this event-loop turn, in seq order from `first`, encoded once for all its clients. */
interface Batch {
  readonly first: number;
  /** Which event each frame is, so a conversation restarted at seq 1 is not mistaken for the batch. */
  readonly events: SequencedEvent['event'][];
  readonly frames: FrameList;
}

/** A client's share of a batch: frames `[from, to)`. */
interface Span {
  readonly batch: Batch;
  readonly from: number;
  to: number;
}

/** The clients of one conversation, and the batch they share this turn. */
interface Group {
  readonly convId: string;
  clients: number;
  batch?: Batch;
}

interface Client {
  readonly ws: WebSocket;
  readonly socket: Duplex;
  readonly group: Group;
  /** What goes out at the next flush, in order: control frames and spans of hub frames. */
  queue: (Buffer | Span)[];
  /** In the flush list (its socket's budget checked this turn). */
  dirty: boolean;
  subscription?: Subscription;
  closed: boolean;
  /** The replayed backlog's bytes, allowed on top of the budget until the socket first drains. */
  allowance: number;
}

export function createWsForwarder(stepwise: Stepwise, encoder: FrameEncoder, config: ForwarderConfig = {}): WsForwarder {
  const { maxBufferedBytes } = { ...DEFAULT_FORWARDER_CONFIG, ...config };
  if (!(Number.isFinite(maxBufferedBytes) && maxBufferedBytes > 0)) {
    throw new RangeError(`createWsForwarder: maxBufferedBytes must be a positive number, got ${maxBufferedBytes}`);
  }
  const clients = new Set<Client>();
  const groups = new Map<string, Group>();
  let dirty: Client[] = [];
  let batched: Group[] = [];
  let flushScheduled = false;
  let disposed = false;

  const wireOf = (chunk: Buffer | Span): Buffer => {
    if (Buffer.isBuffer(chunk)) return chunk;
    return framesOf(chunk.batch.frames, chunk.from, chunk.to);
  };

  // One flush per event-loop turn: each client's frames of that turn go out in one write (a conversation's
  // frames of the turn are one buffer, shared by its clients), which is what makes fan-out cheap.
  const flush = (): void => {
    flushScheduled = false;
    const flushing = dirty;
    dirty = [];
    for (const group of batched) group.batch = undefined;
    batched = [];
    for (const client of flushing) {
      const { queue, socket } = client;
      client.queue = [];
      client.dirty = false;
      if (client.closed || client.ws.readyState !== WebSocket.OPEN) continue;
      if (queue.length === 1) {
        socket.write(wireOf(queue[0] as Buffer | Span));
      } else {
        socket.cork();
        for (const chunk of queue) socket.write(wireOf(chunk));
        socket.uncork();
      }
      if (isTooSlow(client)) tooSlow(client);
    }
  };

  const drop = (client: Client): void => {
    if (client.closed) return;
    client.closed = true;
    client.subscription?.unsubscribe();
    client.queue = [];
    clients.delete(client);
    if (--client.group.clients === 0) groups.delete(client.group.convId);
  };

  // What the kernel did not take yet: a reader that keeps up drains it every turn. One turn's queue
  // is not counted, so a reconnect replaying a long backlog is not mistaken for a slow reader.
  const isTooSlow = (client: Client): boolean => client.socket.writableLength > maxBufferedBytes + client.allowance;

  // Never wait for a slow reader: past its budget it is dropped, and the run and the others go on.
  const tooSlow = (client: Client): void => {
    drop(client);
    client.ws.close(CLOSE_TRY_AGAIN_LATER, 'client too slow; reconnect with since_seq');
  };

  // The socket's backlog only changes when we write (at the flush) or it drains, so checking it once
  // per turn, when the client gets its first frame of the turn, is as good as checking every frame.
  const markDirty = (client: Client): boolean => {
    if (client.dirty) return true;
    if (isTooSlow(client)) {
      tooSlow(client);
      return false;
    }
    client.dirty = true;
    dirty.push(client);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
    return true;
  };

  const enqueue = (client: Client, chunk: Buffer): void => {
    if (!client.closed && markDirty(client)) client.queue.push(chunk);
  };

  // The first client to get a frame this turn adds it to the conversation's batch; the others (and
  // it, for the frames that follow) extend a span over it. A frame the batch cannot hold (a replay
  // of frames older than the batch) goes as a frame of its own.
  const forward = (client: Client, item: SequencedEvent): void => {
    if (client.closed) return;
    const { group } = client;
    let batch = group.batch;
    if (batch === undefined) {
      batch = group.batch = { first: item.seq, events: [], frames: createFrameList() };
      batched.push(group);
    }
    const index = item.seq - batch.first;
    if (index === batch.events.length) {
      batch.events.push(item.event);
      appendTextFrame(batch.frames, encoder.textOf(item));
    } else if (index < 0 || index > batch.events.length || batch.events[index] !== item.event) {
      return enqueue(client, encodeTextFrame(encoder.textOf(item)));
    }
    if (!markDirty(client)) return;
    const last = client.queue[client.queue.length - 1];
    if (last !== undefined && !Buffer.isBuffer(last) && last.batch === batch && last.to === index) last.to = index + 1;
    else client.queue.push({ batch, from: index, to: index + 1 });
  };

  const queuedBytes = (client: Client): number => {
    let bytes = 0;
    for (const chunk of client.queue) bytes += wireOf(chunk).length;
    return bytes;
  };

  const control = (type: string, fields: Record<string, unknown>): Buffer =>
    encodeTextFrame(JSON.stringify({ sem: true, event: { type, id: `${type}:${Date.now()}`, ...fields } }));

  const onMessage = (client: Client, data: RawData, isBinary: boolean): void => {
    if (isBinary) return;
    const text = data.toString();
    if (text.trim() === 'ping' || isPingMessage(text)) enqueue(client, control('ws.pong', { server_time: Date.now() }));
  };

  const attach = (ws: WebSocket, socket: Duplex, { session, sinceSeq }: ClientJoin): void => {
    if (disposed) {
      ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      return;
    }
    let group = groups.get(session.conv_id);
    if (!group) groups.set(session.conv_id, (group = { convId: session.conv_id, clients: 0 }));
    group.clients += 1;
    const client: Client = { ws, socket, group, queue: [], dirty: false, closed: false, allowance: 0 };
    clients.add(client);
    const { hub, controller } = stepwise;
    const lastSeq = hub.lastSeq(session.conv_id);
    enqueue(
      client,
      control('ws.hello', {
        conv_id: session.conv_id,
        session_id: session.session_id,
        server_time: Date.now(),
        last_seq: lastSeq,
        pending_pauses: controller.pending(session.session_id),
        engine: { name: stepwise.engine.name, model: stepwise.engine.model },
      }),
    );
    ws.on('message', (data, isBinary) => onMessage(client, data, isBinary));
    ws.on('close', () => drop(client));
    ws.on('error', () => drop(client));
    // The hello's last_seq and the subscription are taken in the same synchronous step: no gap.
    const subscription = hub.replay$(session.conv_id, sinceSeq ?? lastSeq).subscribe((item) => forward(client, item));
    if (client.closed) {
      subscription.unsubscribe();
      return;
    }
    client.subscription = subscription;
    client.allowance = queuedBytes(client);
    socket.once('drain', () => (client.allowance = 0));
  };

  return {
    attach,
    get clientCount() {
      return clients.size;
    },
    dispose: () => {
      if (disposed) return;
      disposed = true;
      flush();
      for (const client of [...clients]) {
        drop(client);
        client.ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      }
    },
  };
}

function isPingMessage(text: string): boolean {
  if (!text.startsWith('{')) return false;
  try {
    const message = JSON.parse(text) as unknown;
    return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'ws.ping';
  } catch {
    return false;
  }
}
