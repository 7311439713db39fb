import type { GrantRecord, Remember } from './grants.js';
import type { PauseInfo, PausePhase } from './pauses.js';

/**
 * The command port (docs/protocol.md, Several instances): a command that steers a run (decide a pause,
 * cancel a run, switch step mode) is served by the process that runs the conversation. One process
 * alone serves every command itself; an instance of a service delivers a command to the instance that
 * runs it and answers with that one's result. Commands and results are data of the domain: what a
 * frontend (an HTTP route, a signed link, AG-UI, the AI SDK route, the library) does with a result is
 * its own business, and none of them knows where the command was served.
 */

/** A decision at a pause: continue, deny, edit or answer (docs/protocol.md, Decisions). */
export interface DecideCommand {
  readonly type: 'decide';
  readonly pause_id: string;
  /** The conversation the sender says the pause is in: a pause of another is refused `forbidden`. */
  readonly conv_id?: string;
  /** An action the controller does not know is refused `invalid_action`. Default `continue`. */
  readonly action?: string;
  readonly tool_call_ids?: readonly string[];
  readonly reason?: string;
  readonly edits?: Readonly<Record<string, unknown>>;
  /** `edit` at `after_tools`: replaced results (a debugging feature: frontends other than the console never send it). */
  readonly results?: Readonly<Record<string, unknown>>;
  readonly answers?: Readonly<Record<string, unknown>>;
  /** Remember the approval (docs/protocol.md, Grants). */
  readonly remember?: Remember;
}

/** Cancels the conversation's run for good (docs/protocol.md, HTTP routes). */
export interface CancelCommand {
  readonly type: 'cancel';
  readonly conv_id: string;
}

/** Switches step mode on (with an optional filter) or off for a conversation, named by `conv_id` or `session_id`. */
export interface StepModeCommand {
  readonly type: 'step_mode';
  readonly enabled: boolean;
  readonly conv_id?: string;
  readonly session_id?: string;
  readonly tools?: readonly string[];
  readonly phases?: readonly PausePhase[];
}

export type Command = DecideCommand | CancelCommand | StepModeCommand;

/** What each command answers when it was done. */
export interface CommandValues {
  readonly decide: { readonly pause: PauseInfo; readonly grant?: Omit<GrantRecord, 'owner'> };
  readonly cancel: { readonly cancelled: boolean };
  /** On: the session and its conversation; off: the session and how many pauses it released. */
  readonly step_mode: { readonly session_id: string; readonly conv_id?: string; readonly released?: number };
}

/**
 * Why a command was not done; nothing of it took effect. `code` is one of the error codes of
 * docs/protocol.md (Errors); each frontend says it in its own words (an HTTP status, an AG-UI error).
 */
export interface CommandFailure {
  readonly code: string;
  readonly message: string;
  readonly details?: unknown;
  /** Fields a frontend shows beside the error (a conflicting run's `conv_id` and `session_id`). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** Seconds after which the same command may be sent again: it was not served now. */
  readonly retry_after_s?: number;
}

/** A command's result: its value, or the failure that left everything as it was. */
export type CommandResult<C extends Command = Command> =
  | { readonly ok: true; readonly value: CommandValues[C['type']] }
  | { readonly ok: false; readonly error: CommandFailure };

/** A command on its way to the instance that runs its conversation: who sent it, and who it is recorded as taken by. */
export interface CommandRequest<C extends Command = Command> {
  readonly command: C;
  /** The conversation the command is about, when the sender knows it (where it is delivered). */
  readonly conv_id?: string;
  /** The sender's user name; undefined on a server without auth (the single user). */
  readonly user?: string;
  /**
   * Who a decision is recorded as taken by when it is not the user: `link` for a signed link
   * (docs/protocol.md, Webhooks and signed links). Set by the frontend, never by a request body.
   */
  readonly by?: string;
}

/** Serves a command on the process that runs its conversation. */
export type CommandHandler = <C extends Command>(request: CommandRequest<C>) => Promise<CommandResult<C>>;

export interface CommandPort {
  /** Serves the command where its conversation runs, and resolves with that result. */
  send<C extends Command>(request: CommandRequest<C>): Promise<CommandResult<C>>;
  /** The conversation a pause belongs to, wherever its run is; undefined when no process knows it. */
  convOfPause(pauseId: string): Promise<string | undefined>;
}

/** A refusal a command's code throws; the handler turns it into the command's failed result. */
export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly extra?: Readonly<Record<string, unknown>>,
    readonly retry_after_s?: number,
  ) {
    super(message);
  }
}

/** The failure a thrown `CommandError` says, as plain data (it crosses processes). */
export const failureOf = (error: CommandError): CommandFailure => ({
  code: error.code,
  message: error.message,
  ...(error.details === undefined ? {} : { details: error.details }),
  ...(error.extra === undefined ? {} : { extra: error.extra }),
  ...(error.retry_after_s === undefined ? {} : { retry_after_s: error.retry_after_s }),
});

/** Not done now, with nothing changed: the same command may be sent again in a second. */
export const tryAgainLater = (code: string, message: string): CommandError => new CommandError(code, message, undefined, undefined, 1);

/**
 * How long a command waits for what it did to be committed. An instance that sends a command to the one
 * running its conversation waits longer than this for the reply, so the answer is that instance's own.
 */
export const COMMIT_WAIT_MS = 4000;

/**
 * Not confirmed in time, so it may still take effect (docs/protocol.md, Several instances): unlike
 * `tryAgainLater`, `details.outcome` is `unknown`. Sent again, a decision already recorded answers
 * 409 `pause_resolved`.
 */
export const outcomeUnknown = (code: string, message: string): CommandError => new CommandError(code, message, { outcome: 'unknown' }, undefined, 1);

/** One process alone: every command is its own. */
export function createLocalCommands(handler: CommandHandler, convOfPause: (pauseId: string) => string | undefined): CommandPort {
  return {
    send: handler,
    convOfPause: (pauseId) => Promise.resolve(convOfPause(pauseId)),
  };
}
