// The transcript's assistant messages: the streamed text, its reasoning above it and, once final, its usage,
// what the inference sent (request-view.js) and what it answered (inference-view.js).

import { formatMs, h } from './dom.js';
import { createInferenceReply } from './inference-view.js';
import { createReasoningBlock } from './reasoning.js';
import { createInferenceRequest } from './request-view.js';

/** The llm.* frame handlers; `ensureRun(event)` is the run a frame belongs to. */
export function createLlmHandlers(ensureRun, loadRequest) {
  return {
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
    'llm.final': (event) => finishMessage(ensureRun(event), event, loadRequest),
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
  };
}

function assistantMessage(run) {
  if (!run.message) {
    const body = h('div', { class: 'msg-body', testid: 'assistant-body' });
    const meta = h('div', { class: 'msg-meta', testid: 'assistant-meta' });
    const node = h('div', { class: 'msg assistant streaming', testid: 'assistant-text', data: { state: 'streaming' } }, body, meta);
    run.message = { node, body, meta };
    run.steps.append(node);
  }
  return run.message;
}

function finishMessage(run, event, loadRequest) {
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
}

// Reasoning sits inside the message it precedes, above the answer's text.
function reasoningOf(run) {
  const message = assistantMessage(run);
  if (!message.reasoning) {
    message.reasoning = createReasoningBlock();
    message.node.insertBefore(message.reasoning.node, message.body);
  }
  return message.reasoning;
}
