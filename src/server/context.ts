import { z } from 'zod';
import type { CommandPort } from '../core/commands.js';
import type { ConversationDirectory } from '../core/directory.js';
import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';
import { mayAccess, type Caller } from './auth.js';
import { forbidden, HttpError, notFound } from './errors.js';
import type { FrameEncoder } from './frame-encoder.js';
import type { ProfileTable } from './profiles.js';

/** What every route needs: the runtime, the frame encoder and the server's switches. */
export interface ServerContext {
  readonly stepwise: Stepwise;
  readonly encoder: FrameEncoder;
  /** Debug mode (docs/protocol.md, Debug mode): `/debug/*` and step mode exist only when on. */
  readonly debug: boolean;
  /** Profiles by slug (docs/protocol.md, Profiles file); empty when the server has none. */
  readonly profiles: ProfileTable;
  /** Where a command that steers a run is served: here, or on the instance that owns the run. */
  readonly commands: CommandPort;
  /** Where the read routes find conversations and pauses: this process's, or the whole service's. */
  readonly directory: ConversationDirectory;
}

export const CONV_ID = /^[A-Za-z0-9_-]{1,128}$/;
export const convIdSchema = z.string().regex(CONV_ID, 'conv_id must match [A-Za-z0-9_-]{1,128}');

/** The caller's session of `convId`: 404 when unknown, 403 when another user's. */
export function ownedSession(context: ServerContext, caller: Caller, convId: string): Session {
  const session = context.stepwise.sessions.get(convId);
  if (!session) throw notFound(`no conversation "${convId}"`);
  assertOwner(caller, session);
  return session;
}

/**
 * The caller's conversation, for a route that only reads what the store keeps: its session here, else
 * its stored record (a conversation another instance runs, or whose idle session was closed here).
 * 404 when neither knows it, 403 when another user's.
 */
export async function ownedConversation(context: ServerContext, caller: Caller, convId: string): Promise<{ readonly session_id: string }> {
  const session = context.stepwise.sessions.get(convId);
  if (session) {
    assertOwner(caller, session);
    return session;
  }
  const stored = context.stepwise.store.durable ? await context.stepwise.store.conversation(convId) : undefined;
  if (!stored) throw notFound(`no conversation "${convId}"`);
  if (!mayAccess(caller, stored.owner)) throw forbidden(`conversation "${convId}" belongs to another user`);
  return stored;
}

export function assertOwner(caller: Caller, session: Session): void {
  if (!mayAccess(caller, session.owner)) throw forbidden(`conversation "${session.conv_id}" belongs to another user`);
}

/** Every `/debug/*` route answers 404 unless debug mode is on. */
export function assertDebug(context: ServerContext): void {
  if (!context.debug) throw new HttpError(404, 'not_found', 'debug mode is off (start the server with --debug or STEPWISE_DEBUG=1)');
}
