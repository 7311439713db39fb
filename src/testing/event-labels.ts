import type { StepwiseEvent } from '../streams/events.js';

/**
 * One short, readable label per event, for marble assertions: `paused:after_inference`,
 * `resumed:timeout`, `tool-result:call_1`, `run-ended:completed`, `text-delta:"Hel"`.
 */
export function labelOf(event: StepwiseEvent): string {
  switch (event.type) {
    case 'paused':
      return `paused:${event.pause.phase}`;
    case 'resumed':
      return `resumed:${event.reason}`;
    case 'run-ended':
      return `run-ended:${event.status}`;
    case 'tool-call-requested':
    case 'tool-execution-started':
    case 'tool-execution-finished':
      return `${event.type}:${event.tool_call_id}`;
    case 'tool-result':
      return `tool-result:${event.tool_call_id}${event.error === undefined ? '' : ':error'}`;
    case 'text-delta':
      return `text-delta:${JSON.stringify(event.delta)}`;
    case 'log':
      return `log:${event.level}`;
    default:
      return event.type;
  }
}
