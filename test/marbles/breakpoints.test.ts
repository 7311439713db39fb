import { marbles } from 'rxjs-marbles/jest';
import {
  editResults,
  type PauseInfo,
  type ScriptedResponse,
  type StepwiseEvent,
  type ToolUseBlock,
} from '../../src/index.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { callEcho, createTestRuntime, isPauseOrEnd, PAUSE_LABELS as L, recordingEngine, startAt } from './helpers.js';

const callRm = (text: string): ScriptedResponse => ({ tool_calls: [{ name: 'rm', arguments: { text } }] });

const pausesOf = (events: readonly StepwiseEvent[]): PauseInfo[] =>
  events.flatMap((event) => (event.type === 'paused' ? [event.pause] : []));

describe('breakpoints', () => {
  it('should pause with a tools filter only for the chosen tools, after inference and after they ran', marbles((m) => {
    const rm = createVirtualTool({ name: 'rm' });
    const rt = createTestRuntime({ responses: [callEcho('a'), callRm('x'), { text: 'done' }], tools: [createVirtualTool(), rm] });
    rt.sw.controller.enable(rt.session.session_id, { tools: ['rm'] });
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 4ms (rq) 1ms (re)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1' }), 5);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 10);
    m.flush();
    expect(pausesOf(events)[0]?.tool_calls.map((call) => call.name)).toEqual(['rm']);
    expect(rt.sw.controller.filterOf(rt.session.session_id)).toEqual({ tools: ['rm'] });
  }));

  it('should pause only at the listed phases', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }] });
    rt.sw.controller.enable(rt.session.session_id, { phases: ['after_tools'] });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('q 4ms (re)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1' }), 5);
  }));

  it("should pause for a tool's own predicate with step mode off, marking the call", marbles((m) => {
    const rm = { ...createVirtualTool({ name: 'rm' }), breakpoint: (args: unknown) => (args as { text: string }).text === 'danger' };
    const rt = createTestRuntime({ responses: [callRm('safe'), callRm('danger'), { text: 'done' }], tools: [rm] });
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 4ms (re)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1' }), 5);
    m.flush();
    expect(pausesOf(events)).toHaveLength(1);
    expect(pausesOf(events)[0]?.tool_calls).toEqual([{ id: 'call_2_1', name: 'rm', input: { text: 'danger' }, breakpoint: true }]);
    expect(rm.calls.map((call) => call.at)).toEqual([0, 5]);
  }));

  it('should keep a breakpoint pause when step mode is disabled, releasing only the pauses step mode caused', marbles((m) => {
    const rm = { ...createVirtualTool({ name: 'rm' }), breakpoint: true as const };
    const rt = createTestRuntime({ responses: [callEcho('a'), callRm('x'), { text: 'done' }], tools: [createVirtualTool(), rm], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 2ms (op) 1ms (re)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => expect(rt.sw.controller.disable(rt.session.session_id)).toBe(1), 3);
    m.scheduler.schedule(() => expect(rt.sw.controller.disable(rt.session.session_id)).toBe(0), 6);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 8);
  }));

  it('should apply the timeout action to a breakpoint pause', marbles((m) => {
    const rm = { ...createVirtualTool({ name: 'rm' }), breakpoint: true as const };
    const rt = createTestRuntime({ responses: [callRm('x'), { text: 'done' }], tools: [rm], pauseTimeoutMs: 1000, timeoutAction: 'deny' });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 999ms (te)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(rm.calls).toHaveLength(0);
  }));

  it('should show the model the edited result while the block keeps the original', marbles((m) => {
    const { engine, requests } = recordingEngine([callEcho('a'), { text: 'done' }]);
    const rt = createTestRuntime({ engine });
    rt.sw.controller.enable(rt.session.session_id, { phases: ['after_tools'] });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('q 4ms (xe)', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => expect(rt.sw.controller.submit(editResults('pause_1', { call_1_1: { echoed: 'EDITED' } }))).toMatchObject({ ok: true }), 5);
    m.flush();
    const seen = requests[1]?.blocks.filter((block): block is ToolUseBlock => block.kind === 'tool_use').map((block) => block.payload);
    expect(seen).toEqual([{ id: 'call_1_1', result: { echoed: 'EDITED' } }]);
    const kept = run.result?.turn.blocks.find((block): block is ToolUseBlock => block.kind === 'tool_use');
    expect(kept?.metadata).toEqual({ original_result: { echoed: 'a' }, edited: true });
  }));

  it('should refuse results outside after_tools, for calls not of the pause, and values that are not JSON', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true });
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    const { controller } = rt.sw;
    m.scheduler.schedule(() => {
      expect(controller.submit(editResults('pause_1', { call_1_1: 1 }))).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      controller.submit({ pause_id: 'pause_1' });
    }, 2);
    m.scheduler.schedule(() => {
      expect(controller.submit(editResults('pause_2', { nope: 1 }))).toMatchObject({ ok: false, error: { code: 'invalid_action', details: { tool_call_ids: ['nope'] } } });
      expect(controller.submit(editResults('pause_2', { call_1_1: () => 1 }))).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
      expect(controller.submit(editResults('pause_2', { call_1_1: { n: Number.NaN } }))).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
      expect(controller.submit({ pause_id: 'pause_2', action: 'edit', edits: { call_1_1: {} } })).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.submit(editResults('pause_2', { call_1_1: [1, 'two', null] }))).toMatchObject({ ok: true });
    }, 4);
    m.flush();
  }));
});
