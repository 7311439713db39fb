import { CommandError, failureOf, tryAgainLater, type Command, type CommandHandler, type CommandRequest, type CommandResult, type CommandValues } from '../../core/commands.js';
import { StoreError } from '../../core/store-errors.js';
import type { Stepwise } from '../stepwise.js';
import { decide } from './decide.js';
import { cancel, stepMode } from './run-commands.js';

export interface CommandHandlerConfig {
  /** Told of what a command threw that was no refusal (a bug): the command fails `internal`. Default: ignored. */
  readonly onError?: (error: unknown) => void;
}

/**
 * Serves the commands that reach this process (docs/protocol.md, Several instances): each by its own
 * function, each result a value or a failure with a code. Where the command came from (a route, a link,
 * another instance) is not its business.
 */
export function createCommandHandler(stepwise: Stepwise, config: CommandHandlerConfig = {}): CommandHandler {
  const serve = (request: CommandRequest): Promise<CommandValues[Command['type']]> => {
    const { command } = request;
    switch (command.type) {
      case 'decide':
        return decide(stepwise, { ...request, command });
      case 'cancel':
        return cancel(stepwise, { ...request, command });
      case 'step_mode':
        return stepMode(stepwise, { ...request, command });
      default:
        return Promise.reject(new CommandError('invalid_request', `no command "${String((command as { type?: unknown }).type)}"`));
    }
  };
  return async <C extends Command>(request: CommandRequest<C>): Promise<CommandResult<C>> => {
    try {
      return { ok: true, value: (await serve(request)) as CommandValues[C['type']] };
    } catch (error) {
      if (error instanceof CommandError) return { ok: false, error: failureOf(error) };
      // A read the command needed (a stored pause, a conversation's owner) while the store is away: done
      // before anything took effect, so it is sent again like any command the store could not take.
      if (error instanceof StoreError && error.code === 'store_unavailable') {
        return { ok: false, error: failureOf(tryAgainLater('store_unavailable', 'the store cannot be reached; try again')) };
      }
      config.onError?.(error);
      return { ok: false, error: { code: 'internal', message: 'internal server error' } };
    }
  };
}
