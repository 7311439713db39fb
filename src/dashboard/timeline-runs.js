// What the transcript shows on a run's card besides its messages and tool calls: the prompt, the end status,
// warning log lines and, for a fork's paused run, the blocks copied before its first frame.

import { h, pretty } from './dom.js';
import { firstPromptOf } from './first-prompts.js';
import { renderBlocks } from './history.js';

export function showPrompt(run, text) {
  if (!text) return;
  run.prompt.textContent = text;
  run.prompt.hidden = false;
}

/** Fills prompts of runs (other dashboards, replays) from the conversation's turns. */
export function fillPrompts(runs, turns) {
  for (const run of runs) {
    if (!run.prompt.hidden || !run.turnId) continue;
    const turn = turns?.find((candidate) => candidate.id === run.turnId);
    showPrompt(run, firstPromptOf(turn ? [turn] : []));
  }
}

/** run.end: the status badge, the run's error unless already shown, and Fork. */
export function endRun(run, event) {
  const status = event.status ?? 'completed';
  run.node.dataset.status = status;
  run.status.className = `badge ${status}`;
  run.status.textContent = status.replace('_', ' ');
  // The run usually fails with the model error just shown; say it once.
  if (event.error && event.error !== run.lastError) {
    run.error.textContent = typeof event.error === 'string' ? event.error : pretty(event.error);
    run.error.hidden = false;
  }
  if (run.message) run.message.node.classList.remove('streaming');
  if (run.fork) run.fork.hidden = false;
}

/** A log frame: warnings and errors are shown in their run; `ensureRun` is called only when needed. */
export function showLog(event, ensureRun) {
  // A fork's re-entered run says how many blocks of its turn were copied (see showCopied).
  if (Number.isInteger(event.fields?.copied_blocks)) ensureRun(event).copiedBlocks = event.fields.copied_blocks;
  if (event.level !== 'warn' && event.level !== 'error') return;
  ensureRun(event).steps.append(h('div', { class: `log ${event.level}`, testid: 'log-line', text: `${event.level}: ${event.message ?? ''}` }));
}

/**
 * A fork's paused run streamed only from its pause on: the copied blocks before it (the model's text
 * and calls) go above its first frame, once.
 */
export function showCopied(runs, turn) {
  const run = runs.find((candidate) => candidate.turnId === turn?.id);
  if (!run || run.copied || run.copiedBlocks === undefined) return;
  run.copied = h('div', { class: 'copied', testid: 'copied-blocks' }, renderBlocks(turn.blocks.slice(0, run.copiedBlocks), { withPrompt: false }));
  run.steps.prepend(run.copied);
}
