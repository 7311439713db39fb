// The inbox page (docs/protocol.md, The inbox): every pause the operator may answer, across conversations,
// live from `/ws/pauses`, soonest deadline first, with a countdown each, answered from the keyboard:
// j/k move, c continue, d deny, e edit, a answer a question (Ctrl+Enter sends the edit or the answer, Escape cancels). Another viewer's
// decision removes the row here too, since the resume frame reaches every viewer.

import { api, endpoint, getToken, setToken } from './api.js';
import { createRow, pauseOfFrame } from './inbox-rows.js';
import { createInboxWindow, limitOf } from './inbox-window.js';

const TICK_MS = 250;
const PING_EVERY_MS = 15_000;
const MAX_BACKOFF_MS = 5_000;
const TYPING = 'input, textarea, select, [contenteditable=""], [contenteditable="true"]';
const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);

const ui = {
  list: byTestId('inbox-list'),
  empty: byTestId('inbox-empty'),
  truncated: byTestId('inbox-truncated'),
  banner: byTestId('error-banner'),
  conn: byTestId('conn-status'),
  tokenForm: byTestId('token-form'),
  tokenInput: byTestId('token-input'),
};

/** Rows by pause id; `selected` is the pause id the keys act on. */
const state = { rows: new Map(), selected: null, clockOffsetMs: 0, socket: null, attempts: 0 };

const ordered = () => [...state.rows.values()].sort((a, b) => a.pause.deadline_ms - b.pause.deadline_ms || (a.pause.pause_id < b.pause.pause_id ? -1 : 1));

function redraw() {
  const rows = ordered();
  if (!state.rows.has(state.selected)) state.selected = rows[0]?.pause.pause_id ?? null;
  // Only what moved is moved: a row being edited keeps its focus while other pauses come and go.
  for (const stale of [...ui.list.children]) if (!state.rows.has(stale.dataset.pauseId)) stale.remove();
  rows.forEach((row, i) => {
    if (ui.list.children[i] !== row.node) ui.list.insertBefore(row.node, ui.list.children[i] ?? null);
  });
  for (const row of rows) {
    if (row.pause.pause_id === state.selected) row.node.dataset.selected = 'true';
    else delete row.node.dataset.selected;
  }
  ui.empty.hidden = rows.length > 0;
  ui.list.dataset.count = String(rows.length);
  ui.truncated.hidden = !inboxWindow.truncated;
  ui.truncated.textContent = `The ${inboxWindow.limit} soonest are shown; more are waiting.`;
  tick();
}

function tick() {
  const now = Date.now() + state.clockOffsetMs;
  for (const row of state.rows.values()) row.tick(now);
}

// Only the soonest `?limit=` pauses have rows (./inbox-window.js).
const inboxWindow = createInboxWindow(
  limitOf(location.search),
  { rows: state.rows, ordered, selected: () => state.selected, make: createRow, changed: redraw },
  (limit) => api.pauses(limit),
);

function add(pause) {
  if (state.rows.has(pause.pause_id)) return;
  state.rows.set(pause.pause_id, createRow(pause));
  inboxWindow.added();
  redraw();
}

function remove(pauseId) {
  const had = state.rows.delete(pauseId);
  inboxWindow.removed(pauseId);
  if (had) redraw();
}

function showError(text) {
  ui.banner.textContent = text;
  ui.banner.hidden = false;
}

/** Sends a decision; the row goes when its resume frame arrives (for every viewer alike). */
async function decide(row, body) {
  ui.banner.hidden = true;
  try {
    await api.decide({ pause_id: row.pause.pause_id, conv_id: row.pause.conv_id, ...body });
  } catch (failure) {
    // Another viewer was first: the resume frame removes the row, there is nothing to say.
    if (failure.code === 'pause_resolved' || failure.code === 'unknown_pause') return remove(row.pause.pause_id);
    // A refused answer: its issues go under the forms, which stay open to be corrected.
    if (body.action === 'answer') row.showIssues(failure.details);
    showError(typeof failure.describe === 'function' ? failure.describe() : String(failure));
  }
}

/** Sends the answers of the row's open forms; the row goes when the resume frame comes. */
function sendAnswers(row) {
  const collected = row.answers();
  if (collected.error) return showError(collected.error);
  return decide(row, { action: 'answer', answers: collected.answers });
}

function move(step) {
  const rows = ordered();
  const at = rows.findIndex((row) => row.pause.pause_id === state.selected);
  const next = rows[Math.min(rows.length - 1, Math.max(0, at + step))];
  if (!next) return;
  state.selected = next.pause.pause_id;
  redraw();
  next.node.scrollIntoView({ block: 'nearest' });
}

function onEditorKey(key, row) {
  if (key.key === 'Escape') {
    key.preventDefault();
    row.closeEditor();
  } else if (key.key === 'Enter' && (key.ctrlKey || key.metaKey) && row.node.dataset.mode === 'answer') {
    key.preventDefault();
    void sendAnswers(row);
  } else if (key.key === 'Enter' && (key.ctrlKey || key.metaKey)) {
    key.preventDefault();
    let edits;
    try {
      edits = row.edits();
    } catch (failure) {
      showError(failure.message);
      return;
    }
    row.closeEditor();
    void decide(row, { action: 'edit', edits });
  }
}

function onKey(key) {
  if (key.defaultPrevented || key.altKey || key.isComposing) return;
  const row = state.rows.get(state.selected);
  if (key.target instanceof Element && key.target.closest(TYPING)) {
    if (row && row.node.contains(key.target)) onEditorKey(key, row);
    return;
  }
  if (key.ctrlKey || key.metaKey) return;
  const actions = {
    j: () => move(1),
    k: () => move(-1),
    c: () => row && decide(row, { action: 'continue' }),
    d: () => row && decide(row, { action: 'deny', reason: 'denied from the inbox' }),
    e: () => row?.openEditor(),
    a: () => row?.openAnswer(),
  };
  const action = actions[key.key.toLowerCase()];
  if (!action) return;
  key.preventDefault();
  action();
}

function setConn(stateName) {
  ui.conn.dataset.state = stateName;
  ui.conn.querySelector('.label').textContent = stateName === 'open' ? 'live' : stateName;
}

function handle(raw) {
  let event;
  try {
    event = JSON.parse(raw)?.event;
  } catch {
    return;
  }
  if (!event || typeof event.type !== 'string') return;
  if (event.type === 'ws.hello') {
    state.attempts = 0;
    state.clockOffsetMs = typeof event.server_time === 'number' ? event.server_time - Date.now() : 0;
    // What is waiting now, as the server has it: rows of pauses resolved while away go.
    const pending = new Map((event.pending_pauses ?? []).map((pause) => [pause.pause_id, pause]));
    for (const pauseId of [...state.rows.keys()]) if (!pending.has(pauseId)) state.rows.delete(pauseId);
    for (const pause of pending.values()) if (!state.rows.has(pause.pause_id)) state.rows.set(pause.pause_id, createRow(pause));
    inboxWindow.listed(event.truncated);
    redraw();
  } else if (event.type === 'debugger.pause') add(pauseOfFrame(event));
  else if (event.type === 'debugger.resume') remove(event.pause_id);
}

function connect() {
  const target = endpoint('/ws/pauses');
  target.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const params = new URLSearchParams({ limit: String(inboxWindow.limit) });
  const token = getToken();
  // Browsers cannot set headers on a WebSocket, hence the query parameter the server also accepts.
  if (token) params.set('access_token', token);
  target.search = params.toString();
  const ws = new WebSocket(target.href);
  state.socket = ws;
  setConn(state.attempts > 0 ? 'reconnecting' : 'connecting');
  const ping = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: 'ws.ping' })), PING_EVERY_MS);
  ws.addEventListener('open', () => setConn('open'));
  ws.addEventListener('message', (message) => handle(message.data));
  ws.addEventListener('close', () => {
    clearInterval(ping);
    if (state.socket !== ws) return;
    const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** state.attempts);
    state.attempts += 1;
    setConn('reconnecting');
    setTimeout(connect, delay);
  });
}

ui.tokenInput.value = getToken();
ui.tokenForm.addEventListener('submit', (submit) => {
  submit.preventDefault();
  setToken(ui.tokenInput.value.trim());
  const old = state.socket;
  state.socket = null;
  old?.close(1000, 'token changed');
  connect();
});
document.addEventListener('keydown', onKey);
setInterval(tick, TICK_MS);
connect();
