// The debugger's side panels, wired together: the event log with its frame-payload panel, the
// Events tab of narrow windows, and the per-tool breakpoints over the server's tools (GET /tools).

import { api } from './api.js';
import { createBreakpoints } from './breakpoints.js';
import { createEventLog } from './eventlog.js';
import { createFrameDetail } from './frame-detail.js';
import { createPaneTabs } from './panes.js';

/** `byTestId(id)` finds the page's nodes; `convId()` is the open conversation; the rest are callbacks. */
export function createInspector({ byTestId, convId, onBreakpointsSet, onError }) {
  const counter = byTestId('frame-count');
  const frameDetail = createFrameDetail(byTestId('frame-detail'));
  const eventLog = createEventLog(byTestId('event-log'), counter, { onSelect: frameDetail.show });
  const panes = createPaneTabs(byTestId('pane-tabs'), byTestId('layout'), byTestId('tab-events-count'));
  const breakpoints = createBreakpoints(byTestId('breakpoints'), {
    convId,
    enable: api.setBreakpoints,
    listTools: api.tools,
    onSet: onBreakpointsSet,
    onError: (failure) => onError(failure, `Could not set breakpoints${failure?.status === 404 ? ' (is the server started with --debug?)' : ''}`),
  });

  return {
    eventLog,
    /** Logs a frame. */
    frame(event) {
      eventLog.append(event);
      panes.count(counter.dataset.count);
    },
    /** The conversation's step filter (GET /conversations/:id). */
    showFilter: breakpoints.showFilter,
    /** Another conversation: an empty log and no payload open. */
    reset() {
      eventLog.reset();
      frameDetail.close();
      panes.count(0);
    },
  };
}
