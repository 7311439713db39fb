import { mayAccess } from '../../core/access.js';
import { CommandError, tryAgainLater, type CommandRequest, type CommandValues, type DecideCommand } from '../../core/commands.js';
import type { GrantRecord } from '../../core/grants.js';
import type { ContinueCommand } from '../../streams/step-commands.js';
import { grantTargetOf, publicGrant } from '../grant-book.js';
import type { Stepwise } from '../stepwise.js';
import { whenCommitted } from './commits.js';

type DecideRuntime = Pick<Stepwise, 'controller' | 'sessions' | 'store' | 'grants' | 'registry'>;

const ACTIONS: readonly string[] = ['continue', 'deny', 'edit', 'answer'] satisfies readonly NonNullable<ContinueCommand['action']>[];
const isAction = (action: string): action is NonNullable<ContinueCommand['action']> => ACTIONS.includes(action);

/**
 * A decision at a pause (docs/protocol.md, Decisions), on the process that runs its conversation: the
 * sender may decide it (its conversation is theirs), the controller checks it against the pause and
 * resolves it, and it is done once committed. A refused decision changes nothing.
 */
export async function decide(stepwise: DecideRuntime, request: CommandRequest<DecideCommand>): Promise<CommandValues['decide']> {
  const { command, user } = request;
  if (command.action !== undefined && !isAction(command.action)) {
    // Refused before the pause is looked up: the command is wrong whichever pause it names.
    throw new CommandError('invalid_action', `unknown action "${command.action}" (continue, deny, edit or answer)`);
  }
  const { controller } = stepwise;
  // Known also after resolution, so a foreign pause is refused whatever its state.
  const convId = controller.convOf(command.pause_id);
  if (convId !== undefined) {
    if (command.conv_id !== undefined && command.conv_id !== convId) throw forbidden(`pause "${command.pause_id}" does not belong to conversation "${command.conv_id}"`);
    const session = stepwise.sessions.get(convId);
    if (session && !mayAccess(user, session.owner)) throw forbidden(`conversation "${convId}" belongs to another user`);
  }
  const makeGrant = prepareGrant(stepwise, user, convId, command);
  const submitted = controller.submit({
    pause_id: command.pause_id,
    ...(command.action ? { action: command.action as ContinueCommand['action'] } : {}),
    ...(command.tool_call_ids ? { tool_call_ids: command.tool_call_ids } : {}),
    ...(command.reason !== undefined ? { reason: command.reason } : {}),
    ...(command.edits ? { edits: command.edits } : {}),
    ...(command.results ? { results: command.results } : {}),
    ...(command.answers ? { answers: command.answers } : {}),
    ...((request.by ?? user) ? { by: request.by ?? user } : {}),
  });
  if (!submitted.ok) {
    const { code, message, details } = submitted.error;
    if (code === 'unknown_pause' && request.conv_id !== undefined) await refuseStoredPause(stepwise, user, request.conv_id, command.pause_id);
    throw new CommandError(code, message, details);
  }
  // Made while the decision commits: the resumed run, handed back once it has, already meets the grant.
  const grant = makeGrant && (await makeGrant());
  // One the store refused took no effect (the pause is pending again, its grant revoked).
  await whenCommitted(submitted.committed$, 'this decision').catch(async (error: unknown) => {
    if (grant) await stepwise.grants.revoke(grant.grant_id);
    throw error;
  });
  return { pause: submitted.pause, ...(grant ? { grant: publicGrant(grant) } : {}) };
}

const forbidden = (message: string): CommandError => new CommandError('forbidden', message);

/**
 * A decision's `remember`, checked before the decision is submitted (a refused command changes nothing) and made
 * once it was accepted: returns the maker, or undefined without `remember`.
 */
function prepareGrant(stepwise: DecideRuntime, user: string | undefined, convId: string | undefined, command: DecideCommand): (() => Promise<GrantRecord>) | undefined {
  const { remember } = command;
  if (remember === undefined) return undefined;
  // An answer is for one question: a human answers each time (docs/protocol.md, Questions for a human).
  if (command.action === 'deny' || command.action === 'answer') throw new CommandError('invalid_action', `"remember" goes with continue or edit, not ${command.action}`);
  const target = grantTargetOf(convId === undefined ? undefined : stepwise.sessions.get(convId));
  // No session here: the pause is unknown here, and the submit says so.
  if (!target) return undefined;
  const { grants, registry } = stepwise;
  const issues = grants.issues(target, remember, (name) => registry.get(name)?.grantable !== false);
  if (issues.length > 0) throw new CommandError('invalid_request', 'this cannot be remembered', { fields: issues });
  return () => grants.remember(target, remember, user ?? 'local');
}

/**
 * A pause this process does not hold, as the store has it: pending, its run is being taken over here
 * (or was just lost): try again; decided before (before a takeover or a restart): `pause_resolved`.
 */
async function refuseStoredPause(stepwise: DecideRuntime, user: string | undefined, convId: string, pauseId: string): Promise<void> {
  const { store } = stepwise;
  const conversation = await store.conversation(convId);
  if (!conversation) return;
  if (!mayAccess(user, conversation.owner)) throw forbidden(`conversation "${convId}" belongs to another user`);
  if ((await store.pauses(convId)).some((pause) => pause.pause_id === pauseId)) {
    throw tryAgainLater('pause_not_ready', `pause "${pauseId}" is being taken over by another instance; send the decision again`);
  }
  const decided = (await store.decisions(convId)).find((decision) => decision.pause_id === pauseId);
  if (decided) throw new CommandError('pause_resolved', `pause "${pauseId}" was already resolved (${decided.reason})`, { reason: decided.reason });
}
