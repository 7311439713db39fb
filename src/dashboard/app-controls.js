// The page's controls: the composer (a prompt, sent with Enter), + New, Cancel and the access token form.
// `app` is what app.js shares with them: {state, selectConversation, setRunning, refreshConversations,
// stepToggle, profiles, showError, clearError}.

import { api, getToken, setToken } from './api.js';
import { navigate, newConvId } from './routing.js';

export function installComposer(ui, { state, selectConversation, stepToggle, profiles, showError, clearError }) {
  ui.composer.addEventListener('submit', async (submitEvent) => {
    submitEvent.preventDefault();
    const prompt = ui.prompt.value.trim();
    if (!prompt) return;
    if (!state.convId) {
      // The socket joins (and so creates) the conversation before the first /chat: nothing is missed.
      // A step mode chosen before there was a conversation applies to the new one (overrides below).
      const convId = newConvId();
      navigate(convId);
      selectConversation(convId, { keepStepChoice: true });
    }
    const body = { prompt, conv_id: state.convId };
    if (stepToggle.checked) body.overrides = { step_mode: true };
    ui.send.disabled = true;
    state.timeline.expectPrompt(prompt);
    try {
      await profiles.chat(body);
      ui.prompt.value = '';
      clearError();
    } catch (failure) {
      state.timeline.expectPrompt(null);
      showError(failure, 'Could not send');
    } finally {
      ui.send.disabled = false;
    }
  });

  ui.prompt.addEventListener('keydown', (keyEvent) => {
    if (keyEvent.key === 'Enter' && !keyEvent.shiftKey && !keyEvent.isComposing) {
      keyEvent.preventDefault();
      ui.composer.requestSubmit();
    }
  });
}

export function installHeaderControls(ui, { state, selectConversation, setRunning, refreshConversations, stepToggle, profiles, showError, clearError }) {
  ui.newConv.addEventListener('click', () => {
    const convId = newConvId();
    stepToggle.carryToNew();
    navigate(convId);
    selectConversation(convId, { keepStepChoice: true });
    ui.prompt.focus();
  });

  ui.cancel.addEventListener('click', async () => {
    if (!state.convId) return;
    ui.cancel.disabled = true;
    try {
      const reply = await api.cancel(state.convId);
      if (!reply.cancelled) setRunning(false);
    } catch (failure) {
      showError(failure, 'Could not cancel');
      setRunning(state.running);
    }
  });

  ui.tokenForm.addEventListener('submit', (submitEvent) => {
    submitEvent.preventDefault();
    setToken(ui.tokenInput.value.trim());
    ui.tokenForm.dataset.saved = getToken() ? 'true' : 'false';
    clearError();
    refreshConversations();
    profiles.load();
    selectConversation(state.convId);
  });
}
