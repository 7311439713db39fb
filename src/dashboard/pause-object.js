// The pause object as the dashboard reads it (docs/protocol.md, The pause object), from a frame or a listing, and
// the words a card uses for how a pause ended and how long it has left.

export const REASON_TEXT = {
  continued: 'Continued',
  denied: 'Denied',
  edited: 'Continued with edited arguments',
  answered: 'Answered',
  timeout: 'Deadline passed (timeout action applied)',
  disabled: 'Step mode disabled',
  cancelled: 'Run cancelled',
};

/** The pause object (docs/protocol.md, The pause object) from either a debugger.pause frame or a hello's pending pause. */
export function normalizePause(source) {
  const meta = source.metadata ?? {};
  const calls = source.tool_calls ?? source.extra?.tool_calls ?? source.extra?.pending_tools ?? [];
  return {
    pause_id: source.pause_id ?? source.id,
    phase: source.phase ?? 'after_inference',
    summary: source.summary ?? '',
    deadline_ms: Number(source.deadline_ms) || 0,
    inference_id: source.inference_id ?? meta.inference_id,
    tool_calls: (Array.isArray(calls) ? calls : [])
      .filter((call) => call && typeof call === 'object')
      .map((call) => ({
        id: call.id ?? call.tool_call_id,
        name: call.name ?? '?',
        input: call.input ?? call.args ?? call.arguments ?? {},
        breakpoint: call.breakpoint === true,
        // A question for a human: the schema of its answer (docs/protocol.md, Questions for a human).
        ...(call.answer_schema && typeof call.answer_schema === 'object' ? { answer_schema: call.answer_schema } : {}),
      })),
  };
}

export const formatRemaining = (ms) => {
  if (ms <= 0) return 'deadline reached';
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s left`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}:${String(Math.floor(seconds % 60)).padStart(2, '0')} left`;
};
