import { createEvent, type EventFields, type EventOrigin, type StepwiseEvent, type StepwiseEventType } from '../streams/events.js';

/** Builds expected events for one run: `make('resumed', 30_000, { pause_id, reason: 'timeout' })`. */
export type EventFactory = <T extends StepwiseEventType>(type: T, at: number, fields: EventFields<T>) => Extract<StepwiseEvent, { type: T }>;

export function createEventFactory(origin: EventOrigin): EventFactory {
  return (type, at, fields) => createEvent(type, origin, at, fields);
}
