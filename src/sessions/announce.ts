import { eventFrom, type LogLevel } from '../streams/events.js';
import type { Stepwise } from './stepwise.js';

export interface AnnouncedLog {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields?: Record<string, unknown>;
}

/**
 * Publishes a `log` event into every conversation whose run is in progress: a fact about the service
 * that touches those runs (an MCP server whose tools they were offered has stopped). Each log belongs
 * to the run in progress, named by the conversation's newest event. Returns the conversations told.
 */
export function announceToRuns(stepwise: Stepwise, log: AnnouncedLog, at = Date.now()): string[] {
  const { level, message, fields } = log;
  const told: string[] = [];
  for (const session of stepwise.sessions.list()) {
    if (!session.running) continue;
    const { frames } = stepwise.hub.buffered(session.conv_id, stepwise.hub.lastSeq(session.conv_id) - 1);
    const latest = frames[frames.length - 1]?.event;
    if (!latest) continue;
    stepwise.hub.publish(eventFrom('log', latest, at, { level, message, ...(fields ? { fields } : {}) }));
    told.push(session.conv_id);
  }
  return told;
}
