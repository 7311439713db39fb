import { mayAccess } from '../../core/access.js';
import { CommandError, type CancelCommand, type CommandRequest, type CommandValues, type StepModeCommand } from '../../core/commands.js';
import type { Stepwise } from '../stepwise.js';
import type { Session } from '../session.js';
import { whenCommitted } from './commits.js';

type RunRuntime = Pick<Stepwise, 'controller' | 'sessions' | 'store'>;

/** Cancels the conversation's run for good; `cancelled` says whether one was running (or paused). */
export async function cancel(stepwise: RunRuntime, request: CommandRequest<CancelCommand>): Promise<CommandValues['cancel']> {
  const { conv_id } = request.command;
  const cancelled = ownedSession(stepwise, request.user, conv_id).cancel();
  await whenCommitted(stepwise.store.committed$(conv_id));
  return { cancelled };
}

/**
 * Step mode on, with its filter (docs/protocol.md, Breakpoints and result edits), or off, releasing the
 * pauses step mode made (`released`); stored with the conversation.
 */
export async function stepMode(stepwise: RunRuntime, request: CommandRequest<StepModeCommand>): Promise<CommandValues['step_mode']> {
  const { command } = request;
  const session = targetSession(stepwise, request.user, command);
  const { session_id, conv_id } = session;
  if (!command.enabled) {
    const released = stepwise.controller.disable(session_id);
    await whenCommitted(stepwise.store.committed$(conv_id));
    return { session_id, released };
  }
  const { tools, phases } = command;
  const filter = { ...(tools ? { tools } : {}), ...(phases ? { phases: [...new Set(phases)] } : {}) };
  stepwise.controller.enable(session_id, tools || phases ? filter : undefined);
  await whenCommitted(stepwise.store.committed$(conv_id));
  return { session_id, conv_id };
}

/** The sender's session of `convId`: `not_found` when unknown, `forbidden` when another user's. */
function ownedSession(stepwise: RunRuntime, user: string | undefined, convId: string): Session {
  const session = stepwise.sessions.get(convId);
  if (!session) throw new CommandError('not_found', `no conversation "${convId}"`);
  if (!mayAccess(user, session.owner)) throw new CommandError('forbidden', `conversation "${convId}" belongs to another user`);
  return session;
}

/** The session a step mode command names by `conv_id` or `session_id`. */
function targetSession(stepwise: RunRuntime, user: string | undefined, command: StepModeCommand): Session {
  if (command.conv_id !== undefined) {
    const session = ownedSession(stepwise, user, command.conv_id);
    if (command.session_id !== undefined && command.session_id !== session.session_id) {
      throw invalidField('session_id', `session ${command.session_id} is not conversation ${command.conv_id}'s`);
    }
    return session;
  }
  if (command.session_id === undefined) throw invalidField('conv_id', 'give conv_id or session_id');
  const session = stepwise.sessions.list().find((candidate) => candidate.session_id === command.session_id);
  if (!session) throw new CommandError('not_found', `no session "${command.session_id}"`);
  if (!mayAccess(user, session.owner)) throw new CommandError('forbidden', `conversation "${session.conv_id}" belongs to another user`);
  return session;
}

/** `invalid_request` naming one field, as a 400 lists them. */
const invalidField = (field: string, message: string): CommandError => new CommandError('invalid_request', `invalid ${field}`, { fields: [{ field, message }] });
