// Which engine answers this conversation (ws.hello's `engine: {name, model}`): a badge in the header,
// and, for the scripted engine, a notice that replies come from a script and the prompt is ignored.

import { h } from './dom.js';

/** `badge` and `notice` are the page's placeholders; `show(hello.engine)` fills them. */
export function createEngineInfo(badge, notice) {
  const show = (engine) => {
    const known = engine && typeof engine.name === 'string';
    badge.hidden = !known;
    notice.hidden = !(known && engine.name === 'scripted');
    if (!known) return;
    const scripted = engine.name === 'scripted';
    badge.className = `badge engine${scripted ? ' scripted' : ''}`;
    badge.textContent = engine.model && engine.model !== engine.name ? `${engine.name} · ${engine.model}` : engine.name;
    badge.title = scripted ? 'The scripted engine: replies come from a script' : 'The model that answers';
    badge.dataset.engine = engine.name;
    if (scripted) {
      notice.replaceChildren(
        h('strong', { text: 'Scripted demo. ' }),
        'Replies come from a fixed script, not from a model: whatever you type, the same steps play in order. ',
        'Set OPENAI_API_KEY or ANTHROPIC_API_KEY (or pass --engine) to talk to a real model.',
      );
    }
  };
  return { show, clear: () => show(undefined) };
}
