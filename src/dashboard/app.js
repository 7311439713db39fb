// Wires the page: the conversation picked in the URL hash (#/c/<conv_id>, so a link opens the same
// conversation in another tab), its WebSocket stream, the transcript, pause cards and controls.

import { ApiError, api, getToken } from './api.js';
import { installComposer, installHeaderControls } from './app-controls.js';
import { byTestId, findAppElements } from './app-elements.js';
import { createHeaderStatus } from './app-header.js';
import { createBanner } from './banner.js';
import { createConversationList } from './conversations.js';
import { createDecisionFeed } from './decision.js';
import { exposeForDevtools } from './devtools.js';
import { createEngineInfo } from './engine.js';
import { createFirstPrompts } from './first-prompts.js';
import { createGrantsPanel } from './grants.js';
import { createInspector } from './inspector.js';
import { createPauseDeck } from './pauses.js';
import { installPauseShortcuts } from './shortcuts.js';
import { createProfilePicker } from './profiles.js';
import { convFromHash, navigate } from './routing.js';
import { connectConversation } from './socket.js';
import { createStepToggle } from './step-toggle.js';
import { createTimeline } from './timeline.js';

const REFRESH_EVERY_MS = 5000;
// The newest this many in the sidebar: a server with 100 000 conversations lists them all otherwise,
// and the sidebar asks each one's first prompt.
const SIDEBAR_LIMIT = 200;
const ui = findAppElements();

const state = {
  convId: null,
  connection: null,
  deck: null,
  timeline: null,
  clockOffsetMs: 0,
  running: false,
  dropped: false,
};

const inspector = createInspector({
  byTestId,
  convId: () => state.convId,
  onBreakpointsSet: () => {
    clearError();
    stepToggle.show(true);
    refreshConversations();
  },
  onError: (failure, text) => showError(failure, text),
});
const { eventLog } = inspector;
installPauseShortcuts();
const decisions = createDecisionFeed({
  load: api.decisions,
  target: () =>
    state.convId && state.deck
      ? { convId: state.convId, apply: (recorded) => state.timeline.showEarlier(state.deck.record(recorded)) }
      : null,
});
const firstPrompts = createFirstPrompts({ load: api.getConversation, onLearned: () => conversations.redraw() });
const conversations = createConversationList(ui.convList, { onPick: (convId) => navigate(convId), label: firstPrompts.get });

const { setRunning, updatePauseCount, showMeta, onStatus } = createHeaderStatus(ui, state, { conversations, eventLog, refreshConversations });

const engineInfo = createEngineInfo(ui.engineBadge, ui.engineNotice);
const profiles = createProfilePicker(byTestId('profile-picker-label'), byTestId('profile-picker'), { chat: api.chat });
const banner = createBanner(ui.banner);
const showError = banner.show;
const clearError = banner.clear;
const grants = createGrantsPanel(byTestId('grants'), { list: api.grants, revoke: api.revokeGrant, onError: (failure, text) => showError(failure, text) });
const stepToggle = createStepToggle(ui.stepToggle, {
  convId: () => state.convId,
  setStepMode: api.setStepMode,
  onError: (failure, on) =>
    showError(failure, `Could not ${on ? 'enable' : 'disable'} step mode${failure?.status === 404 ? ' (is the server started with --debug?)' : ''}`),
  onChanged: () => {
    clearError();
    refreshConversations();
  },
});

// ---- conversation list and header ---------------------------------------------------------------

let refreshTimer = null;
async function refreshConversations() {
  clearTimeout(refreshTimer);
  try {
    const reply = await api.listConversations(SIDEBAR_LIMIT);
    conversations.set(reply.conversations);
    ui.convMore.hidden = reply.truncated !== true;
    ui.convMore.textContent = `The ${SIDEBAR_LIMIT} newest are listed.`;
    grants.load();
    firstPrompts.fetchMissing((reply.conversations ?? []).map((conv) => conv.conv_id));
    const current = state.convId && conversations.find(state.convId);
    profiles.refresh(current);
    if (current) {
      setRunning(Boolean(current.running) || (state.timeline?.running ?? false));
      stepToggle.show(current.step_mode);
    }
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 401) showError(failure, 'Enter an access token');
  } finally {
    refreshTimer = setTimeout(refreshConversations, REFRESH_EVERY_MS);
  }
}

async function fillPrompts() {
  if (!state.convId) return;
  const convId = state.convId;
  try {
    const conv = await api.getConversation(convId);
    if (state.convId !== convId) return;
    state.timeline.fillPrompts(conv.turns);
    firstPrompts.learn(convId, conv.turns);
    inspector.showFilter(conv.step_filter);
    // A fork's copied turns have no frames here: draw them from their blocks.
    if (conv.forked_from) state.timeline.showHistory(conv.turns);
    if (conv.forked_from?.pause_id) state.timeline.showCopied(conv.turns.at(-1));
  } catch {
    // Prompts are a nicety; the stream itself is what matters.
  }
}

// ---- the stream ---------------------------------------------------------------------------------

function onHello(hello, { clockOffsetMs, resumed }) {
  state.clockOffsetMs = clockOffsetMs;
  state.sessionId = hello.session_id;
  engineInfo.show(hello.engine);
  showMeta();
  stepToggle.joined();
  if (resumed) eventLog.mark(`resumed after seq ${state.connection?.lastSeq ?? 0}`);
  for (const pause of hello.pending_pauses ?? []) state.timeline.placePause(state.deck.open(pause));
  updatePauseCount();
  fillPrompts();
  // Decisions of pauses whose frames are not replayed (a restarted server) still show.
  decisions.resolved();
  refreshConversations();
}

function onFrame(event) {
  inspector.frame(event);
  showMeta();
  state.timeline.apply(event);
  switch (event.type) {
    case 'run.start':
      profiles.lock();
      setRunning(true);
      fillPrompts();
      refreshConversations();
      break;
    case 'run.end':
      setRunning(false);
      fillPrompts();
      refreshConversations();
      break;
    case 'debugger.resume':
      if (event.reason === 'disabled') stepToggle.show(false);
      decisions.resolved();
      // A decision may have made a grant (docs/protocol.md, Grants).
      grants.load();
      break;
    default:
  }
  if (event.type.startsWith('debugger.')) updatePauseCount();
}

/** A new pause deck and transcript for the open conversation; answers in flight for the old ones are dropped. */
function freshView() {
  decisions.reset();
  state.deck?.dispose();
  state.deck = createPauseDeck({ decide: api.decide, serverNow: () => Date.now() + state.clockOffsetMs, convId: state.convId, fork: forkHere });
  const convId = state.convId;
  state.timeline = createTimeline(ui.timeline, {
    pauses: state.deck,
    onFork: (at) => forkHere(at).catch((failure) => showError(failure, 'Could not fork')),
    loadRequest: (messageId) => api.inferenceRequest(convId, messageId),
  });
}

function onHistoryLost() {
  freshView();
  inspector.reset();
  eventLog.mark('the server restarted: replaying what it has');
  setRunning(false);
  updatePauseCount();
}

/** Forks the open conversation (at a turn or a pause) and opens the fork; the pause card shows a refusal. */
async function forkHere(at) {
  const reply = await api.fork(state.convId, at);
  refreshConversations();
  navigate(reply.conv_id);
}

function selectConversation(convId, { keepStepChoice = false } = {}) {
  state.connection?.close();
  clearError();
  state.convId = convId;
  state.clockOffsetMs = 0;
  state.sessionId = null;
  inspector.reset();
  conversations.select(convId);
  ui.title.textContent = convId ?? 'No conversation';
  ui.meta.textContent = convId ? 'connecting…' : 'start one with + New or just send a prompt';
  const known = convId && conversations.find(convId);
  if (!keepStepChoice) stepToggle.show(known?.step_mode);
  profiles.open(known);
  freshView();
  setRunning(false);
  updatePauseCount();
  if (!convId) {
    state.connection = null;
    onStatus('idle');
    return;
  }
  // since_seq=0 replays the conversation's buffered frames: that is the hydration on load.
  state.connection = connectConversation(convId, { onHello, onFrame, onStatus, onHistoryLost, sinceSeq: 0 });
}

// ---- routing ----------------------------------------------------------------------------------

window.addEventListener('hashchange', () => {
  const convId = convFromHash();
  if (convId !== state.convId) selectConversation(convId);
});

// ---- controls -----------------------------------------------------------------------------------

const app = { state, selectConversation, setRunning, refreshConversations, stepToggle, profiles, showError, clearError };
installComposer(ui, app);
installHeaderControls(ui, app);

// ---- start --------------------------------------------------------------------------------------

ui.tokenInput.value = getToken();
ui.tokenForm.dataset.saved = getToken() ? 'true' : 'false';
selectConversation(convFromHash());
refreshConversations();
profiles.load();

exposeForDevtools(state);
