import type { PauseInfo } from '../../core/pauses.js';
import type { LinkClaims } from './signing.js';

/** What a link's page says: a title, a line, and for a pending pause the pause and its one button. */
export interface PageContent {
  readonly title: string;
  readonly text: string;
  readonly pause?: PauseInfo;
  readonly form?: LinkClaims;
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] as string);

/**
 * The small page of a signed link (docs/protocol.md, Webhooks and signed links): everything in it is
 * escaped (a tool's arguments are the model's words), no script runs, and the form posts back to
 * the same URL with the pause and action it was shown for.
 */
export function linkPage(content: PageContent): string {
  const { pause, form } = content;
  const calls = (pause?.tool_calls ?? []).map((call) => `<li><code>${escapeHtml(call.name)}</code> <pre>${escapeHtml(JSON.stringify(call.input, null, 2) ?? '')}</pre></li>`);
  const details = pause
    ? `<p>${escapeHtml(pause.summary)}</p><p>Conversation <code>${escapeHtml(pause.conv_id)}</code>, ${escapeHtml(pause.phase)}, answer before ${escapeHtml(new Date(pause.deadline_ms).toISOString())}.</p>${calls.length > 0 ? `<ul>${calls.join('')}</ul>` : ''}`
    : '';
  const button = form
    ? `<form method="post"><input type="hidden" name="pause_id" value="${escapeHtml(form.pause_id)}"><input type="hidden" name="action" value="${form.action}"><button type="submit">${form.action === 'continue' ? 'Continue' : 'Deny'}</button></form>`
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>stepwise · ${escapeHtml(content.title)}</title>
<style>body{font:15px system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}pre{white-space:pre-wrap}button{font-size:1.1em;padding:.5em 1.5em}</style></head>
<body><h1>${escapeHtml(content.title)}</h1>${content.text ? `<p>${escapeHtml(content.text)}</p>` : ''}${details}${button}</body></html>`;
}
