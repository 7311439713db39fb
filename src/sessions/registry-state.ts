import type { JsonValue, Store, StoredConversation } from '../core/store.js';
import type { LoopPorts } from '../operators/loop-state.js';
import type { EventHub } from '../streams/event-hub.js';
import type { FrameLog } from '../streams/frame-log.js';
import type { StepController } from '../streams/step-controller.js';
import type { RecentAdoptions } from './recent-adoptions.js';
import type { Retention, RetentionConfig } from './retention.js';
import type { RunSubscriptions } from './run-subscriptions.js';
import { createSession } from './loop-session.js';
import type { HeldSession, SessionChoices, SessionSettings } from './session.js';
import type { SessionIndex } from './session-index.js';
import type { StoreWriter } from './store-writer.js';
import type { WriteGate } from './write-gate.js';

/** What the session registry is wired to. */
export interface SessionRegistryPorts {
  /** The ports every session's runs go through. */
  readonly loop: LoopPorts;
  /** The runtime's part of every session's settings: its loop, views, builders and system prompt. */
  readonly settings: Omit<SessionSettings, 'ports' | 'onActivity' | 'onRunEnded' | 'runs'>;
  /** Where the registry keeps its sessions, made before it (./session-index.ts). */
  readonly index: SessionIndex;
  readonly hub: EventHub;
  readonly frames: FrameLog;
  readonly store: Store;
  readonly writer: StoreWriter;
  readonly gate: WriteGate;
  /** The controller as runs use it: a step mode change is stored. */
  readonly controller: StepController;
  /** Puts an engine state back for a conversation (the engine of `choices`, else the runtime's). */
  readonly restoreEngine: (convId: string, state: JsonValue, choices: SessionChoices | undefined) => void;
  /** Told as a run starts, before it publishes anything (tracing connects then). */
  readonly onRunStarting: () => void;
  readonly retention?: RetentionConfig;
}

/** What the registry's parts share: its sessions, their index by session id, and what it owns for them. */
export interface RegistryState {
  readonly ports: SessionRegistryPorts;
  readonly sessions: Map<string, HeldSession>;
  readonly convBySession: Map<string, string>;
  /** One subscription per run in progress, held here: the registry owns its sessions' runs. */
  readonly runs: RunSubscriptions;
  readonly retention: Retention;
  readonly adoptions: RecentAdoptions;
  readonly settings: SessionSettings;
  /** The runtime was disposed or suspended: no session opens any more. */
  ended: boolean;
}

/** Every session's settings: the runtime's, and the registry told of each run's start and end. */
export function createSessionSettings(state: Pick<RegistryState, 'ports' | 'sessions' | 'retention' | 'runs'>): SessionSettings {
  const { ports, sessions, retention, runs } = state;
  const { gate, writer, controller } = ports;
  return {
    ...ports.settings,
    ports: ports.loop,
    runs,
    onActivity: (session, restored) => {
      if (session.running) ports.onRunStarting();
      if (sessions.get(session.conv_id) !== session) return;
      // At a run's start: its profile may have been chosen after the session opened.
      if (session.running && !restored && gate.writes(session.conv_id)) writer.conversation(session, controller.stepOf(session.session_id));
      retention.observe(session.conv_id, session.running);
      if (!session.running) retention.makeRoom(sessions.size);
    },
    onRunEnded: (session, result) => {
      if (gate.writes(session.conv_id)) writer.runEnded(result);
    },
  };
}

/** Adds a session to the registry (room made first, so it is never the one evicted). */
export function admit(state: RegistryState, session: HeldSession): HeldSession {
  state.ports.gate.unfence(session.conv_id);
  state.retention.makeRoom(state.sessions.size + 1);
  state.sessions.set(session.conv_id, session);
  state.convBySession.set(session.session_id, session.conv_id);
  state.retention.observe(session.conv_id, false);
  return session;
}

/** Cancels the conversation's run, switches its step mode off and drops it and its buffered events. */
export function closeSession(state: RegistryState, convId: string): boolean {
  const session = state.sessions.get(convId);
  if (!session) return false;
  const { hub, frames, store, controller, loop } = state.ports;
  // Out of the map first: a run ended by this close reports activity for a session already gone.
  state.sessions.delete(convId);
  state.convBySession.delete(session.session_id);
  state.retention.forget(convId);
  session.dispose();
  controller.disable(session.session_id);
  const lastSeq = hub.lastSeq(convId);
  hub.forget(convId);
  frames.forget(convId);
  // A durable store keeps the conversation's log, which a session opened again under this id goes
  // on from (seq is never reused): read from the store then when it can say at once, else remembered
  // here. A memory store drops it with the session, as the hub does.
  if (!store.durable) store.deleteConversation(convId);
  else {
    if (!store.lastSeqNow) hub.seed(convId, lastSeq);
    store.forget?.(convId);
  }
  loop.engine.forget?.(convId);
  return true;
}

/** A stored conversation's session; an idle one already here (adopted from another instance) is brought up to date. */
export function reopenStored(state: RegistryState, conversation: StoredConversation, choices: SessionChoices | undefined): HeldSession {
  const existing = state.sessions.get(conversation.conv_id);
  if (!existing) return reopen(state, conversation, choices);
  applyStored(state.ports, existing.session_id, conversation, choices);
  return existing;
}

/** A stored conversation's session as it was: same ids, owner, profile, step mode and engine state. */
function reopen(state: RegistryState, conversation: StoredConversation, choices: SessionChoices | undefined): HeldSession {
  const { conv_id, session_id, created_at, owner, profile, forked_from } = conversation;
  const identity = { conv_id, session_id, created_at, ...(owner === undefined ? {} : { owner }), ...(forked_from === undefined ? {} : { forked_from }) };
  const session = createSession(identity, state.settings, { ...choices, ...(profile === undefined ? {} : { profile }) });
  applyStored(state.ports, session_id, conversation, choices);
  return admit(state, session);
}

/** A stored conversation's step mode and engine state, on its session here. */
function applyStored(ports: SessionRegistryPorts, sessionId: string, conversation: StoredConversation, choices: SessionChoices | undefined): void {
  ports.controller.restoreStep(sessionId, conversation.step);
  if (conversation.engine_state !== undefined) ports.restoreEngine(conversation.conv_id, conversation.engine_state, choices);
}
