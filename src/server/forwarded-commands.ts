import { errorBody, HttpError } from './errors.js';
import { cancelRun } from './routes-chat.js';
import { continuePause, disableStep, enableStep, type StepCommand } from './routes-debug.js';

/**
 * The commands another instance may forward to a run's owner, by route (SPEC §7): the owner answers
 * with the route's own function for the caller the forwarded token names, with no HTTP request to
 * itself (that hop was a third of `cluster_resume`).
 */
export const FORWARDABLE: Readonly<Record<string, StepCommand>> = Object.freeze({
  '/chat/cancel': cancelRun,
  '/debug/step/enable': enableStep,
  '/debug/step/disable': disableStep,
  '/debug/continue': continuePause,
});

/** A command's reply as its route sends it: 200 and the result, or the refusal's status and error body. */
export function replyOf(run: () => unknown, onError?: (error: unknown) => void): { status: number; body: unknown } {
  try {
    return { status: 200, body: run() };
  } catch (error) {
    if (!(error instanceof HttpError)) {
      onError?.(error);
      return { status: 500, body: errorBody('internal', 'internal server error') };
    }
    return { status: error.status, body: { ...(error.extra ?? {}), ...errorBody(error.code, error.message, error.details) } };
  }
}

