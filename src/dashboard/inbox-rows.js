// One row of the inbox per waiting pause (docs/protocol.md, The inbox): what the run asks, where, and how
// long is left. Rows are plain elements; the inbox page keeps them in deadline order and selects one.

import { h, pretty } from './dom.js';
import { createQuestionForms } from './question-form.js';

/** A pause object from a `debugger.pause` frame (the listing's shape, as `ws.hello` gives it). */
export function pauseOfFrame(frame) {
  return {
    pause_id: frame.pause_id,
    phase: frame.phase,
    summary: frame.summary,
    deadline_ms: frame.deadline_ms,
    conv_id: frame.metadata?.conversation_id,
    ...(frame.kind ? { kind: frame.kind } : {}),
    tool_calls: frame.phase === 'after_inference' ? (frame.extra?.tool_calls ?? []) : [],
  };
}

/** Seconds left before a deadline, as the countdown shows it. */
export function countdownText(deadlineMs, nowMs) {
  const left = Math.max(0, Math.ceil((deadlineMs - nowMs) / 1000));
  return `${left} s`;
}

/** The row of one pause; its editor (one JSON box per call) is shown by `e`, a question's answer form by `a`. */
export function createRow(pause) {
  const calls = pause.tool_calls ?? [];
  const editors = calls.map((call) =>
    h('textarea', { class: 'input code', rows: 3, testid: 'inbox-edit-args', data: { toolCallId: call.id }, 'aria-label': `arguments of ${call.name}` }),
  );
  const editor = h('div', { class: 'inbox-editor', testid: 'inbox-editor', hidden: true }, editors);
  const questions = createQuestionForms(calls);
  const answerBox = h('div', { class: 'inbox-editor', testid: 'inbox-answer', hidden: true }, questions.forms.map(({ form }) => form.node));
  const countdown = h('span', { class: 'badge', testid: 'inbox-countdown' });
  const node = layoutRow(pause, calls, { countdown, editor, answerBox });
  return {
    node,
    pause,
    /** Shows the deadline's countdown at `nowMs` (the server's clock). */
    tick: (nowMs) => {
      countdown.textContent = countdownText(pause.deadline_ms, nowMs);
    },
    /** Opens the editor with the arguments the model asked for; false when there is nothing to edit. */
    openEditor: () => {
      if (editors.length === 0) return false;
      calls.forEach((call, i) => (editors[i].value = JSON.stringify(call.input ?? {}, null, 2)));
      editor.hidden = false;
      node.dataset.mode = 'edit';
      editors[0].focus();
      return true;
    },
    /** Opens the answer form of the pause's questions; false when it asks none. */
    openAnswer: () => {
      if (questions.forms.length === 0) return false;
      answerBox.hidden = false;
      node.dataset.mode = 'answer';
      answerBox.querySelector('input, select, textarea')?.focus();
      return true;
    },
    /** The answers the forms hold (`{answers}`), or why they cannot be sent (`{error}`). */
    answers: () => questions.collect(),
    /** Shows what the server refused (details.answers of a 400) under each form. */
    showIssues: (details) => questions.showIssues(details),
    closeEditor: () => {
      editor.hidden = true;
      answerBox.hidden = true;
      delete node.dataset.mode;
      node.focus();
    },
    /** The edited arguments by tool_call_id; throws a SyntaxError naming the call whose JSON is wrong. */
    edits: () => readEdits(calls, editors),
  };
}

// The row's head (kind, conversation, countdown), summary and calls, then its editor and answer form, hidden.
function layoutRow(pause, calls, { countdown, editor, answerBox }) {
  return h(
    'li',
    { class: 'inbox-row', testid: 'inbox-row', tabindex: -1, data: { pauseId: pause.pause_id, convId: pause.conv_id ?? '', phase: pause.phase } },
    h('div', { class: 'inbox-head' },
      h('span', { class: 'badge', testid: 'inbox-kind', text: pause.kind === 'question' ? 'question' : pause.phase === 'after_inference' ? 'tools requested' : 'tools ran' }),
      h('a', { class: 'small', href: `./#/c/${encodeURIComponent(pause.conv_id ?? '')}`, text: pause.conv_id ?? '', testid: 'inbox-conv' }),
      countdown,
    ),
    h('div', { class: 'inbox-summary', text: pause.summary ?? '' }),
    calls.map((call) => h('pre', { class: 'small', testid: 'inbox-call', text: `${call.name} ${pretty(call.input)}` })),
    editor,
    answerBox,
  );
}

function readEdits(calls, editors) {
  return Object.fromEntries(
    calls.map((call, i) => {
      try {
        return [call.id, JSON.parse(editors[i].value)];
      } catch (failure) {
        throw new SyntaxError(`arguments of ${call.name}: ${failure.message}`);
      }
    }),
  );
}
