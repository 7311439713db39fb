// The transcript of a conversation, built from SEM frames: one card per run, holding the streamed
// assistant text, every tool call from request to result, pause cards, errors and usage.

import { formatMs, h, keepPinned, pretty } from './dom.js';
import { renderEarlierDecision } from './decision.js';
import { firstPromptOf } from './first-prompts.js';
import { renderBlocks, renderHistoryTurn } from './history.js';
import { createInferenceReply } from './inference-view.js';
import { createReasoningBlock } from './reasoning.js';
import { createInferenceRequest } from './request-view.js';
import { createRun, createToolCard, setState } from './run-cards.js';

const same = (a, b) => {
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
};

/**
 * Creates the transcript inside `pane`. `pauses` places and resolves pause cards (see pauses.js);
 * `loadRequest(messageId)` fetches what an inference sent to the model.
 */
export function createTimeline(pane, { pauses, onFork, loadRequest }) {
  let runs = [];
  let current = null;
  let pendingPrompt = null;

  const empty = () =>
    h('div', { class: 'empty', testid: 'timeline-empty' }, h('div', { class: 'empty-title', text: 'Nothing here yet' }), h('div', { text: 'Send a prompt below. With step mode on, the run stops before each tool call so you can inspect, edit or deny it.' }));

  const reset = () => {
    runs = [];
    current = null;
    pendingPrompt = null;
    pane.replaceChildren(empty());
  };

  const startRun = (event) => {
    pane.querySelector('[data-testid="timeline-empty"]')?.remove();
    // A turn drawn from its blocks before its frames arrived (a fork's paused turn): the frames win.
    if (event.turn_id) pane.querySelector(`[data-testid="history-turn"][data-turn-id="${CSS.escape(event.turn_id)}"]`)?.remove();
    current = createRun(event, onFork);
    runs.push(current);
    if (pendingPrompt !== null) {
      showPrompt(current, pendingPrompt);
      pendingPrompt = null;
    }
    pane.append(current.node);
    return current;
  };

  // Frames of a run whose run.start fell out of the server's buffer still need a home.
  const ensureRun = (event) => current ?? startRun({ inference_id: event.metadata?.inference_id ?? '(earlier)' });

  const showPrompt = (run, text) => {
    if (!text) return;
    run.prompt.textContent = text;
    run.prompt.hidden = false;
  };

  const assistantMessage = (run) => {
    if (!run.message) {
      const body = h('div', { class: 'msg-body', testid: 'assistant-body' });
      const meta = h('div', { class: 'msg-meta', testid: 'assistant-meta' });
      const node = h('div', { class: 'msg assistant streaming', testid: 'assistant-text', data: { state: 'streaming' } }, body, meta);
      run.message = { node, body, meta };
      run.steps.append(node);
    }
    return run.message;
  };

  const finishMessage = (run, event) => {
    const message = assistantMessage(run);
    const text = typeof event.text === 'string' ? event.text : message.body.textContent;
    message.body.textContent = text;
    message.node.classList.remove('streaming');
    message.node.dataset.state = 'final';
    if (!text) message.node.classList.add('no-text');
    const meta = event.metadata ?? {};
    const usage = meta.usage ?? {};
    run.tokens.input += Number(usage.input_tokens) || 0;
    run.tokens.output += Number(usage.output_tokens) || 0;
    const parts = [meta.model, usage.input_tokens !== undefined && `${usage.input_tokens} in / ${usage.output_tokens ?? 0} out tokens`, meta.stop_reason && `stop: ${meta.stop_reason}`, formatMs(meta.duration_ms)];
    message.meta.textContent = parts.filter(Boolean).join(' · ');
    run.usage.textContent = `usage: ${run.tokens.input} input + ${run.tokens.output} output tokens`;
    run.reply = createInferenceReply(event);
    for (const call of run.calls ?? []) run.reply.addCall(call);
    if (loadRequest && event.id) message.node.append(createInferenceRequest(event.id, () => loadRequest(event.id)).node);
    message.node.append(run.reply.node);
    run.message = null;
  };

  // Reasoning sits inside the message it precedes, above the answer's text.
  const reasoningOf = (run) => {
    const message = assistantMessage(run);
    if (!message.reasoning) {
      message.reasoning = createReasoningBlock();
      message.node.insertBefore(message.reasoning.node, message.body);
    }
    return message.reasoning;
  };

  const toolFor = (run, event) => {
    let tool = run.tools.get(event.id);
    if (!tool) {
      tool = createToolCard(event);
      run.tools.set(event.id, tool);
      run.steps.append(tool.node);
    }
    return tool;
  };

  const handlers = {
    'run.start': (event) => startRun(event),
    'llm.start': (event) => {
      const run = ensureRun(event);
      run.message = null;
      // The results an after_tools pause follows are this inference's; earlier ones are settled.
      run.results = [];
      // The calls this inference asks for may stream before its llm.final: its reply lists them.
      run.calls = [];
      run.reply = null;
      assistantMessage(run);
    },
    'llm.delta': (event) => {
      const message = assistantMessage(ensureRun(event));
      message.body.textContent = typeof event.cumulative === 'string' ? event.cumulative : message.body.textContent + (event.delta ?? '');
    },
    'llm.final': (event) => finishMessage(ensureRun(event), event),
    'llm.thinking.start': (event) => reasoningOf(ensureRun(event)),
    'llm.thinking.delta': (event) => {
      const reasoning = reasoningOf(ensureRun(event));
      reasoning.update(typeof event.cumulative === 'string' ? event.cumulative : `${reasoning.text}${event.delta ?? ''}`);
    },
    'llm.thinking.final': (event) => reasoningOf(ensureRun(event)).finish(event.text),
    'llm.error': (event) => {
      const run = ensureRun(event);
      if (run.message) {
        // A failed inference that streamed nothing leaves no bubble; partial text stays, marked.
        if (run.message.body.textContent === '') run.message.node.remove();
        run.message.node.classList.remove('streaming');
        run.message.node.dataset.state = 'failed';
        run.message = null;
      }
      run.lastError = event.message;
      run.steps.append(h('div', { class: 'event-error', testid: 'llm-error' }, h('strong', { text: 'model error' }), ` ${event.message ?? ''}`, event.code ? h('code', { class: 'muted', text: ` ${event.code}` }) : null));
    },
    'tool.start': (event) => {
      const run = ensureRun(event);
      if (!run.tools.has(event.id)) (run.reply ? run.reply.addCall(event) : (run.calls ??= []).push(event));
      toolFor(run, event);
    },
    'tool.delta': (event) => {
      const tool = toolFor(ensureRun(event), event);
      setState(tool, 'running');
      const input = event.patch?.input;
      if (event.patch && 'input' in event.patch && !same(input, tool.input)) {
        tool.node.dataset.edited = 'true';
        tool.ran.replaceChildren(h('div', { class: 'label warn', text: 'ran with (edited by operator)' }), h('pre', { testid: 'tool-exec-args', text: pretty(input) }));
        tool.ran.hidden = false;
      }
    },
    'tool.result': (event) => {
      const run = ensureRun(event);
      const tool = toolFor(run, event);
      const failed = event.error !== undefined && event.error !== null && event.error !== '';
      setState(tool, failed ? 'error' : 'ok', failed ? 'error' : 'ok');
      if (!failed) (run.results ??= []).push({ id: event.id, name: event.name ?? tool.node.dataset.name, result: event.result });
      tool.result.replaceChildren(
        h('div', { class: `label ${failed ? 'bad' : 'good'}`, text: failed ? 'error' : 'result' }),
        h('pre', { class: failed ? 'bad' : '', testid: failed ? 'tool-error' : 'tool-result', text: pretty(failed ? event.error : event.result) }),
      );
      tool.result.hidden = false;
    },
    'tool.done': (event) => {
      const tool = toolFor(ensureRun(event), event);
      tool.node.dataset.done = 'true';
      tool.duration.textContent = formatMs(event.duration_ms);
    },
    'debugger.pause': (event) => {
      // Its frames are here after all: the card replaces the compact earlier entry.
      pane.querySelector(`[data-testid="earlier-decision"][data-pause-id="${CSS.escape(event.pause_id ?? event.id ?? '')}"]`)?.remove();
      const run = ensureRun(event);
      run.steps.append(pauses.open(event, { results: event.phase === 'after_tools' ? run.results ?? [] : [] }));
    },
    'debugger.resume': (event) => pauses.resolve(event),
    'run.end': (event) => {
      const run = ensureRun(event);
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
      current = null;
    },
    log: (event) => {
      // A fork's re-entered run says how many blocks of its turn were copied (see showCopied).
      if (Number.isInteger(event.fields?.copied_blocks)) ensureRun(event).copiedBlocks = event.fields.copied_blocks;
      if (event.level !== 'warn' && event.level !== 'error') return;
      ensureRun(event).steps.append(h('div', { class: `log ${event.level}`, testid: 'log-line', text: `${event.level}: ${event.message ?? ''}` }));
    },
  };

  reset();

  return {
    reset,
    /** Renders one frame; unknown types are left to the event log. */
    apply(event) {
      const handler = handlers[event.type];
      if (handler) keepPinned(pane, () => handler(event));
    },
    /** Remembers the prompt just sent, for the run.start that may arrive before the /chat reply. */
    expectPrompt(text) {
      pendingPrompt = text;
    },
    /** Fills prompts of runs (other dashboards, replays) from the conversation's turns. */
    fillPrompts(turns) {
      for (const run of runs) {
        if (!run.prompt.hidden || !run.turnId) continue;
        const turn = turns?.find((candidate) => candidate.id === run.turnId);
        showPrompt(run, firstPromptOf(turn ? [turn] : []));
      }
    },
    /** Decisions whose pauses have no card here (their frames are gone), at the top, once each. */
    showEarlier(decisions) {
      const drawn = new Set([...pane.querySelectorAll('[data-testid="earlier-decision"]')].map((node) => node.dataset.pauseId));
      const missing = decisions.filter((decision) => decision?.pause_id && !drawn.has(decision.pause_id));
      if (missing.length === 0) return;
      pane.querySelector('[data-testid="timeline-empty"]')?.remove();
      const first = pane.firstElementChild;
      for (const decision of missing) pane.insertBefore(renderEarlierDecision(decision), first);
    },
    /** Draws the turns that have no run here (a fork's copied history) above the runs, once each. */
    showHistory(turns) {
      const streamed = new Set(runs.map((run) => run.turnId));
      const drawn = new Set([...pane.querySelectorAll('[data-testid="history-turn"]')].map((node) => node.dataset.turnId));
      const missing = (turns ?? []).filter((turn) => turn?.id && !streamed.has(turn.id) && !drawn.has(turn.id));
      if (missing.length === 0) return;
      pane.querySelector('[data-testid="timeline-empty"]')?.remove();
      const firstRun = runs[0]?.node.isConnected ? runs[0].node : null;
      for (const turn of missing) pane.insertBefore(renderHistoryTurn(turn), firstRun);
    },
    /**
     * A fork's paused run streamed only from its pause on: the copied blocks before it (the model's text
     * and calls) go above its first frame, once.
     */
    showCopied(turn) {
      const run = runs.find((candidate) => candidate.turnId === turn?.id);
      if (!run || run.copied || run.copiedBlocks === undefined) return;
      run.copied = h('div', { class: 'copied', testid: 'copied-blocks' }, renderBlocks(turn.blocks.slice(0, run.copiedBlocks), { withPrompt: false }));
      run.steps.prepend(run.copied);
    },
    /** Places a card opened from ws.hello (a pause older than the replayed frames) at the end. */
    placePause(card) {
      if (!card.isConnected) keepPinned(pane, () => (current?.steps ?? pane).append(card));
    },
    get running() {
      return current !== null;
    },
  };
}
