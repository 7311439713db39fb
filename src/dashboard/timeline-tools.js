// The transcript's tool calls: one card per call (run-cards.js), from request through what ran (after an
// operator's edit) to the result.

import { formatMs, h, pretty } from './dom.js';
import { createToolCard, setState } from './run-cards.js';

const same = (a, b) => {
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
};

/** The tool.* frame handlers; `ensureRun(event)` is the run a frame belongs to. */
export function createToolHandlers(ensureRun) {
  return {
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
  };
}

function toolFor(run, event) {
  let tool = run.tools.get(event.id);
  if (!tool) {
    tool = createToolCard(event);
    run.tools.set(event.id, tool);
    run.steps.append(tool.node);
  }
  return tool;
}
