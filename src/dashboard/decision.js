// What a resolved pause card says about its decision (the audit trail, docs/protocol.md, Durability): who decided, what they
// chose, the calls they denied and why, and for an edit each call's arguments (or results) before and
// after. The `debugger.resume` frame carries only `reason` and `by`; the rest comes from
// GET /conversations/:conv_id/decisions, which the store keeps, so a reload or a server restart shows
// exactly what was decided rather than what this page happened to see.

import { h, pretty } from './dom.js';

/** Which timeout action ran, read from the recorded decision: deny lists calls, abort only says why. */
export function timeoutActionOf(decision) {
  if (decision.reason !== 'timeout') return undefined;
  if (Array.isArray(decision.tool_call_ids) && decision.tool_call_ids.length > 0) return 'deny';
  return decision.message ? 'abort' : 'continue';
}

/**
 * The details block of one decision. `callName(id)` names a tool call for people (the card knows its
 * pause's calls); ids it does not know are shown as they are.
 */
export function renderDecision(decision, callName = () => undefined) {
  const label = (id) => {
    const name = callName(id);
    return name ? `${name} (${id})` : id;
  };
  const rows = [
    h('div', { class: 'decision-row' }, h('span', { class: 'label', text: 'decided by' }), h('span', { class: `badge by ${decision.by === 'system' ? 'system' : 'person'}`, testid: 'decision-by', text: decision.by ?? 'system' })),
  ];
  const timeoutAction = timeoutActionOf(decision);
  if (timeoutAction) {
    rows.push(h('div', { class: 'decision-row' }, h('span', { class: 'label', text: 'timeout action' }), h('code', { testid: 'decision-timeout-action', text: timeoutAction })));
  }
  const denied = decision.reason === 'denied' || timeoutAction === 'deny' ? decision.tool_call_ids ?? [] : [];
  if (denied.length > 0) {
    rows.push(
      h(
        'div',
        { class: 'decision-row' },
        h('span', { class: 'label', text: 'denied' }),
        h('span', { class: 'decision-denied' }, denied.map((id) => h('code', { testid: 'decision-denied', data: { toolCallId: id }, text: label(id) }))),
      ),
    );
  }
  if (decision.message) {
    rows.push(h('div', { class: 'decision-row' }, h('span', { class: 'label', text: 'message' }), h('q', { testid: 'decision-message', text: decision.message })));
  }
  for (const [id, change] of Object.entries(decision.edits ?? {})) {
    rows.push(
      h(
        'div',
        { class: 'decision-edit', testid: 'decision-edit', data: { toolCallId: id } },
        h('div', { class: 'label', text: `edited ${label(id)}` }),
        h('div', { class: 'diff' }, h('pre', { class: 'before', testid: 'edit-before', text: pretty(change?.before) }), h('span', { class: 'arrow', text: '→' }), h('pre', { class: 'after', testid: 'edit-after', text: pretty(change?.after) })),
      ),
    );
  }
  for (const [id, answer] of Object.entries(decision.answers ?? {})) {
    rows.push(h('div', { class: 'decision-edit', testid: 'decision-answer', data: { toolCallId: id } }, h('div', { class: 'label', text: `answered ${label(id)}` }), h('pre', { class: 'after', text: pretty(answer) })));
  }
  return h('div', { class: 'decision', testid: 'pause-decision', data: { by: decision.by ?? '', reason: decision.reason ?? '' } }, rows);
}

/**
 * A decision whose pause has no card here: its frames are gone (a server that restarted without them,
 * or beyond the replay buffer), while the store still has the decision. Shown compactly, above the runs.
 */
export function renderEarlierDecision(decision) {
  return h(
    'div',
    { class: 'pause earlier', testid: 'earlier-decision', data: { pauseId: decision.pause_id, phase: decision.phase ?? '', reason: decision.reason ?? '', by: decision.by ?? '', state: 'resolved' } },
    h('div', { class: 'pause-head' }, h('span', { class: 'pause-icon', 'aria-hidden': 'true' }), h('strong', { text: 'Earlier pause' }), h('span', { class: 'badge phase', text: String(decision.phase ?? '').replace('_', ' ') }), h('code', { class: 'muted', text: decision.pause_id }), h('span', { class: 'spacer' }), h('span', { class: 'countdown', text: decision.reason ?? '' })),
    renderDecision(decision),
  );
}

/**
 * Reads the conversation's decisions after `debugger.resume` frames, one request per burst (a replay
 * after a reload resumes many cards at once; the route answers them all), and hands them to the
 * current pause deck. The server records a decision before it publishes the resume, so the read
 * that follows a resume always finds it.
 */
export function createDecisionFeed({ load, target }) {
  let timer = null;
  let generation = 0;
  return {
    /** A pause was resolved (live or replayed), or the stream (re)joined: read the decisions soon. */
    resolved() {
      clearTimeout(timer);
      const asked = generation;
      timer = setTimeout(async () => {
        const current = target();
        if (!current) return;
        try {
          const reply = await load(current.convId);
          // Another conversation may have been picked meanwhile: its cards are not these.
          if (asked === generation) current.apply(reply.decisions ?? []);
        } catch {
          // The card already says who resolved it (the frame's `by`); the details come with the next resume.
        }
      }, 30);
    },
    /** The conversation changed: answers still in flight belong to the old one. */
    reset() {
      clearTimeout(timer);
      generation += 1;
    },
  };
}
