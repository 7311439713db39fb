/** A run asked of a conversation that already has one in progress. */
export class RunInProgressError extends Error {
  override readonly name = 'RunInProgressError';
  readonly code = 'run_in_progress';
  constructor(
    readonly conv_id: string,
    readonly session_id: string,
  ) {
    super(`conversation ${conv_id} already has a run in progress`);
  }
}

/** Choices made for a session that has already run: its engine, tools and profile are fixed. */
export class SessionStartedError extends Error {
  override readonly name = 'SessionStartedError';
  readonly code = 'session_started';
  constructor(readonly conv_id: string) {
    super(`conversation ${conv_id} has already run: its engine, tools and profile are fixed`);
  }
}

/** A run asked of a session that was closed, disposed or suspended. */
export class SessionClosedError extends Error {
  override readonly name = 'SessionClosedError';
  readonly code = 'session_closed';
  constructor(readonly conv_id: string) {
    super(`conversation ${conv_id} was closed (sessions.close or retention): open it again to start a new session`);
  }
}

/** A run's allow-list names tools its session does not have. */
export class UnknownToolsError extends Error {
  override readonly name = 'UnknownToolsError';
  readonly code = 'unknown_tools';
  constructor(readonly tools: readonly string[]) {
    super(`unknown tool names: ${tools.join(', ')}`);
  }
}
