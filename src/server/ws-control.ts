import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';

/**
 * The frames the server sends on its own account, not the hub's: they carry no seq. The hello lists the
 * pauses committed up to `lastSeq` (docs/protocol.md, Durability: every pause an operator has seen
 * survives a crash); one made but not yet committed comes as its `debugger.pause` frame once it is.
 */
export function helloFrame({ controller, engine, hub }: Stepwise, session: Session, lastSeq: number): string {
  const uncommitted = new Set<string>();
  for (const { event } of hub.buffered(session.conv_id, lastSeq).frames) if (event.type === 'paused') uncommitted.add(event.pause.pause_id);
  return controlFrame('ws.hello', {
    conv_id: session.conv_id,
    session_id: session.session_id,
    server_time: Date.now(),
    last_seq: lastSeq,
    pending_pauses: controller.pending(session.session_id).filter((pause) => !uncommitted.has(pause.pause_id)),
    // Lets the dashboard say when it shows the scripted demo rather than a model.
    engine: { name: engine.name, model: engine.model },
  });
}

export function pongFrame(): string {
  return controlFrame('ws.pong', { server_time: Date.now() });
}

function controlFrame(type: string, fields: Record<string, unknown>): string {
  return JSON.stringify({ sem: true, event: { type, id: `${type}:${Date.now()}`, ...fields } });
}

/** A client's text `ping` or `{"type":"ws.ping"}` (docs/protocol.md "WebSocket"); any other text is ignored. */
export function isPing(text: string): boolean {
  if (text.trim() === 'ping') return true;
  if (!text.startsWith('{')) return false;
  try {
    const message = JSON.parse(text) as unknown;
    return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'ws.ping';
  } catch {
    return false;
  }
}
