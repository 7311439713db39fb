// The page's fixed elements (index.html), found once by their data-testid.

export const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);

export function findAppElements() {
  return {
    conn: byTestId('conn-status'),
    connLabel: byTestId('conn-status').querySelector('.label'),
    tokenForm: byTestId('token-form'),
    tokenInput: byTestId('token-input'),
    newConv: byTestId('new-conversation'),
    convList: byTestId('conversation-list'),
    convMore: byTestId('conversation-more'),
    title: byTestId('conv-title'),
    meta: byTestId('conv-meta'),
    stepToggle: byTestId('step-toggle'),
    runState: byTestId('run-state'),
    pauseCount: byTestId('pause-count'),
    cancel: byTestId('cancel-run'),
    banner: byTestId('error-banner'),
    timeline: byTestId('timeline'),
    composer: byTestId('composer'),
    prompt: byTestId('prompt-input'),
    send: byTestId('send'),
    engineBadge: byTestId('engine-badge'),
    engineNotice: byTestId('engine-notice'),
  };
}
