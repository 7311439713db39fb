import type { ForkOrigin, StoredConversation } from '../core/store.js';
import { createRecentAdoptions } from './recent-adoptions.js';
import { admit, closeSession, createSessionSettings, reopenStored, type RegistryState, type SessionRegistryPorts } from './registry-state.js';
import { createRetention } from './retention.js';
import { createRunSubscriptions } from './run-subscriptions.js';
import { createSession } from './loop-session.js';
import type { HeldSession, Session, SessionChoices } from './session.js';

export type { SessionRegistryPorts } from './registry-state.js';

/** Options for a new session; they apply only when `open` creates it (see `Session.configure`). */
export interface OpenSessionOptions extends SessionChoices {
  readonly conv_id?: string;
  readonly owner?: string;
  readonly forked_from?: ForkOrigin;
}

/** Where a runtime's sessions are held: it opens, holds and disposes them. */
export interface SessionRegistry {
  /** Returns the conversation's session, creating it (and the conversation) when new. */
  open(options?: OpenSessionOptions): Session;
  get(convId: string): Session | undefined;
  list(): Session[];
  /** Cancels the conversation's run, switches its step mode off and drops it and its buffered events. */
  close(convId: string): boolean;
  /**
   * A conversation another instance created (docs/protocol.md, Several instances), as this one's session without a run: same ids,
   * turns and owner; seq goes on from its stored log. A session already here is returned, brought up
   * to date (turns, engine state, step mode) unless it is running: another instance may have run it since.
   */
  adopt(conversation: StoredConversation): Session;
  /**
   * Another instance owns the conversation's run now (its lease lapsed here, docs/protocol.md, Several instances): the run stops
   * where it stands, publishing and storing nothing more, and the session is dropped. False if none.
   */
  relinquish(convId: string): boolean;
  /** Cancels every run and closes every session. */
  dispose(): void;
}

/** The registry as its runtime drives it: its sessions as it holds them. */
export interface RuntimeSessionRegistry extends SessionRegistry {
  open(options?: OpenSessionOptions): HeldSession;
  get(convId: string): HeldSession | undefined;
  list(): HeldSession[];
  adopt(conversation: StoredConversation): HeldSession;
  /** The conversation of a session held here; undefined for one that is not (its step mode is not stored). */
  convOfSession(sessionId: string): string | undefined;
  /** Recovery's reopen: a stored conversation's session; an idle one already here is brought up to date. */
  reopen(conversation: StoredConversation, choices: SessionChoices | undefined): HeldSession;
  /** The runtime is disposed: every run cancelled, every session closed, none opened after. False when it had ended already. */
  end(): boolean;
  /**
   * The runtime is suspended: publishing and storing muted, then every run stopped where it stands
   * (their checkpoints kept), none opened after. False when it had ended already.
   */
  suspend(): boolean;
}

/**
 * The session registry: it creates, holds and closes the sessions of one runtime, subscribes each
 * one's run and holds that subscription (one per run), and disposes them all idempotently.
 */
export function createSessionRegistry(ports: SessionRegistryPorts): RuntimeSessionRegistry {
  const { byConv: sessions, convBySession } = ports.index;
  const runs = createRunSubscriptions();
  const isWatched = (convId: string): boolean => ports.hub.isWatched(convId) || ports.frames.isWatched(convId);
  const retention = createRetention({ scheduler: ports.loop.scheduler, close: (convId) => closeSession(state, convId), isWatched }, ports.retention);
  const state: RegistryState = {
    ports,
    sessions,
    convBySession,
    runs,
    retention,
    adoptions: createRecentAdoptions(ports.loop.scheduler),
    settings: createSessionSettings({ ports, sessions, retention, runs }),
    ended: false,
  };
  const dispose = (): void => {
    for (const convId of [...sessions.keys()]) closeSession(state, convId);
    retention.dispose();
    runs.dispose();
  };
  return {
    open: (options) => openSession(state, options),
    get: (convId) => sessions.get(convId),
    list: () => [...sessions.values()],
    close: (convId) => closeSession(state, convId),
    adopt: (conversation) => adoptConversation(state, conversation),
    relinquish: (convId) => relinquishSession(state, convId),
    dispose,
    convOfSession: (sessionId) => state.convBySession.get(sessionId),
    reopen: (conversation, choices) => reopenStored(state, conversation, choices),
    end: () => {
      if (state.ended) return false;
      state.ended = true;
      dispose();
      return true;
    },
    suspend: () => {
      if (state.ended) return false;
      state.ended = true;
      ports.gate.mute();
      for (const session of sessions.values()) session.suspend();
      retention.dispose();
      return true;
    },
  };
}

function openSession(state: RegistryState, { conv_id, owner, forked_from, ...choices }: OpenSessionOptions = {}): HeldSession {
  if (state.ended) throw new Error('this stepwise runtime was disposed');
  const existing = conv_id === undefined ? undefined : state.sessions.get(conv_id);
  if (existing) return existing;
  // Adopted a moment ago and closed since (retention, with more busy sessions than it keeps):
  // adopted again, never created anew over the stored conversation of another instance.
  const adopted = conv_id === undefined ? undefined : state.adoptions.recent(conv_id);
  if (adopted) return adoptConversation(state, adopted);
  const { loop, writer, controller, store, hub } = state.ports;
  // A conversation closed here before goes on from its stored log (see `closeSession`).
  if (conv_id !== undefined && store.durable && hub.lastSeq(conv_id) === 0) {
    const stored = store.lastSeqNow?.(conv_id) ?? 0;
    if (stored > 0) hub.seed(conv_id, stored);
  }
  const identity = {
    conv_id: conv_id ?? loop.ids.next('conv'),
    session_id: loop.ids.next('sess'),
    created_at: loop.scheduler.now(),
    ...(owner === undefined ? {} : { owner }),
    ...(forked_from === undefined ? {} : { forked_from }),
  };
  const session = admit(state, createSession(identity, state.settings, choices));
  writer.conversation(session, controller.stepOf(session.session_id));
  return session;
}

function adoptConversation(state: RegistryState, conversation: StoredConversation): HeldSession {
  const { hub } = state.ports;
  state.adoptions.remember(conversation);
  if (conversation.last_seq > hub.lastSeq(conversation.conv_id)) hub.seed(conversation.conv_id, conversation.last_seq);
  const existing = state.sessions.get(conversation.conv_id);
  if (existing?.running) return existing;
  // An idle session here is brought up to date: another instance may have run the conversation since.
  const session = reopenStored(state, conversation, undefined);
  session.restoreTurns(conversation.turns);
  return session;
}

function relinquishSession(state: RegistryState, convId: string): boolean {
  const session = state.sessions.get(convId);
  if (!session) return false;
  state.ports.gate.fence(convId);
  session.suspend();
  closeSession(state, convId);
  return true;
}
