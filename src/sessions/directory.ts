import { bySoonest, type ConversationDirectory, type ConversationSummary, type ConversationView, type ListedPause } from '../core/directory.js';
import { createLocalPauseFeed } from './pause-feed.js';
import type { Session } from './session.js';
import type { Stepwise } from './stepwise.js';

/** One process alone: its conversations are its sessions, their pauses its controller's. */
export function createLocalDirectory(stepwise: Pick<Stepwise, 'sessions' | 'controller' | 'frames'>): ConversationDirectory {
  const { sessions, controller } = stepwise;
  const summaryOf = (session: Session): ConversationSummary => ({
    conv_id: session.conv_id,
    session_id: session.session_id,
    ...(session.owner === undefined ? {} : { owner: session.owner }),
    running: session.running,
    step_mode: controller.isEnabled(session.session_id),
    created_at: session.created_at,
    profile: session.profile ?? null,
    ...(session.forked_from ? { forked_from: session.forked_from } : {}),
  });
  const pauses = (convId?: string): Promise<ListedPause[]> => {
    const pending = convId === undefined ? controller.pending() : pendingOf(sessions.get(convId), controller);
    const listed: ListedPause[] = [];
    for (const pause of pending) {
      const session = sessions.get(pause.conv_id);
      if (session?.session_id === pause.session_id) listed.push({ pause, owner: session.owner, profile: session.profile ?? null });
    }
    return Promise.resolve(listed);
  };
  return {
    list: () => Promise.resolve(sessions.list().map(summaryOf)),
    get: (convId) => {
      const session = sessions.get(convId);
      return Promise.resolve(session && viewOf(summaryOf(session), session, controller));
    },
    pauses,
    // In memory already: sorted whole, which 100 000 pending pauses take milliseconds for.
    soonestPauses: async (shown, limit) => (await pauses()).filter(shown).sort(bySoonest).slice(0, limit),
    pauseFrames$: createLocalPauseFeed(stepwise.frames.events$, sessions),
    open: () => Promise.resolve(),
  };
}

type Controller = Stepwise['controller'];

function viewOf(summary: ConversationSummary, session: Session, controller: Controller): ConversationView {
  const { created_at: _listedOnly, ...identity } = summary;
  const filter = controller.filterOf(session.session_id);
  return {
    ...identity,
    // Absent means no filter (docs/protocol.md, Breakpoints and result edits).
    ...(filter ? { step_filter: filter } : {}),
    turns: session.turns().map((turn) => ({ id: turn.id, blocks: turn.blocks })),
    pending_pauses: controller.pending(session.session_id),
  };
}

const pendingOf = (session: Session | undefined, controller: Controller) => (session ? controller.pending(session.session_id) : []);
