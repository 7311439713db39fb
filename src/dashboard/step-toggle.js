// The step mode switch. It shows the conversation's step mode as the server reports it, except while
// a change of ours is on its way; and it is the operator's choice, so `+ New` carries it over to the
// new conversation (switched on there once the socket has joined, and so created, it).

/**
 * `input` is the checkbox. `convId()` names the open conversation (none: the choice waits for the
 * first prompt, which sends it as an override); `setStepMode(convId, on)` asks the server;
 * `onError(failure, on)` reports a refusal; `onChanged()` runs after the server accepted a change.
 */
export function createStepToggle(input, { convId, setStepMode, onError, onChanged }) {
  let busy = false;
  let carried = false;

  const set = async (on) => {
    const target = convId();
    if (!target) return;
    busy = true;
    input.disabled = true;
    try {
      await setStepMode(target, on);
      onChanged();
    } catch (failure) {
      input.checked = !on;
      onError(failure, on);
    } finally {
      busy = false;
      input.disabled = false;
    }
  };

  input.addEventListener('change', () => {
    carried = false;
    set(input.checked);
  });

  return {
    get checked() {
      return input.checked;
    },
    /** The server's view (the conversation list, a conversation just opened), unless a change is in flight. */
    show(stepMode) {
      if (!busy) input.checked = Boolean(stepMode);
    },
    /** `+ New`: keep the current choice for the conversation about to be created. */
    carryToNew() {
      carried = input.checked;
    },
    /** The socket joined the open conversation: apply a carried choice there. */
    joined() {
      if (!carried) return;
      carried = false;
      set(true);
    },
  };
}
