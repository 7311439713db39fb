/**
 * The command port (docs/protocol.md, Several instances): a command that steers a run (continue,
 * deny, edit, cancel, step mode on or off) is served by the process that owns the run. One process
 * alone serves every command itself; an instance of a service delivers a command to the run's owner
 * and answers with the owner's reply. Routes send through the port and never know which it is.
 */

/** A command on its way to the run's owner: the route it came in by, who sent it, and its body. */
export interface CommandRequest {
  /** `/debug/continue`, `/chat/cancel`, `/debug/step/enable` or `/debug/step/disable`. */
  readonly name: string;
  /** The conversation the command is about, when the route knows it. */
  readonly conv_id?: string;
  /** The caller's user name; undefined on a server without auth. */
  readonly user?: string;
  /**
   * Who a decision is recorded as taken by when it is not the caller's user name: `link` for a signed
   * link (docs/protocol.md, Webhooks and signed links). Set by the server, never by a request body.
   */
  readonly by?: string;
  readonly body: unknown;
}

/** The owner's answer, as a route sends it: a status, a JSON body, and when to try again (503). */
export interface CommandReply {
  readonly status: number;
  readonly body: unknown;
  /** Seconds, for `Retry-After`: the command was not served and may be sent again. */
  readonly retry_after_s?: number;
}

/** Serves a command on the process that owns its run. */
export type CommandHandler = (request: CommandRequest) => Promise<CommandReply>;

export interface CommandPort {
  /** Serves the command where its conversation's run is owned, and resolves with that reply. */
  send(request: CommandRequest): Promise<CommandReply>;
  /** The conversation a pause belongs to, wherever its run is; undefined when no process knows it. */
  convOfPause(pauseId: string): Promise<string | undefined>;
}

/** One process alone: every command is its own. */
export function createLocalCommands(handler: CommandHandler, convOfPause: (pauseId: string) => string | undefined): CommandPort {
  return {
    send: handler,
    convOfPause: (pauseId) => Promise.resolve(convOfPause(pauseId)),
  };
}
