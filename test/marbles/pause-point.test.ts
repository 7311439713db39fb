import { marbles, type Context } from 'rxjs-marbles/jest';
import { map, NEVER, of } from 'rxjs';
import {
  createSequentialIds,
  createStepController,
  createToolRegistry,
  pausePoint,
  type Block,
  type LoopState,
  type StepController,
  type StepControllerConfig,
  type StepwiseEvent,
} from '../../src/index.js';
import { createVirtualTool, labelOf } from '../../src/testing/index.js';
import { createProbe, createTestLoopPorts, runContext } from './helpers.js';

const call: Block = { id: 'b1', kind: 'tool_call', payload: { id: 'call_1', name: 'echo', args: { text: 'a' } } };

function setup() {
  const published: StepwiseEvent[] = [];
  const controller = createStepController({ ids: createSequentialIds(), publish: (e) => published.push(e) });
  const ports = { controller, registry: createToolRegistry([createVirtualTool()]) };
  const state = (blocks: Block[]): LoopState => ({ run: runContext(), blocks, iteration: 1 });
  return { controller, ports, published, state };
}

const summary = map((s: LoopState) => `${s.outcome?.status ?? 'open'}:${s.decision?.action ?? '-'}`);

/** Step mode on for sess_1, and the controller port's every pause logged in `pauses.log`. */
function setupProbed(m: Pick<Context, 'cold'>, config: StepControllerConfig = {}) {
  const { ports, published } = createTestLoopPorts({ tools: [createVirtualTool()], controller: config });
  const pauses = createProbe(m);
  const controller: StepController = { ...ports.controller, pause: (request) => pauses.watch(ports.controller.pause(request)) };
  controller.enable('sess_1');
  const state = (blocks: Block[]): LoopState => ({ run: runContext(), blocks, iteration: 1 });
  return { controller, ports: { ...ports, controller }, published, pauses, state };
}

describe('pausePoint', () => {
  it('should pass the state through at once when step mode is off', marbles((m) => {
    const { ports, state } = setup();
    m.expect(of(state([call])).pipe(pausePoint('after_inference', ports), summary)).toBeObservable('(s|)', { s: 'open:-' });
  }));

  it('should pass through after inference when no tool call is pending', marbles((m) => {
    const { controller, ports, state } = setup();
    controller.enable('sess_1');
    m.expect(of(state([])).pipe(pausePoint('after_inference', ports), summary)).toBeObservable('(s|)', { s: 'open:-' });
  }));

  it('should hold the state until continued and carry the decision', marbles((m) => {
    const { controller, ports, published, state } = setup();
    controller.enable('sess_1');
    m.expect(of(state([call])).pipe(pausePoint('after_inference', ports), summary)).toBeObservable('4ms (s|)', { s: 'open:deny' });
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1', action: 'deny', reason: 'no' }), 4);
    m.flush();
    expect(published.map(labelOf)).toEqual(['paused:after_inference', 'resumed:denied']);
    expect(published[0]).toMatchObject({ pause: { tool_calls: [{ id: 'call_1', name: 'echo', input: { text: 'a' } }], summary: 'the model asked for 1 tool call: echo' } });
  }));

  it('should resolve the pause as cancelled when unsubscribed, which is how a run is cancelled', marbles((m) => {
    const { controller, ports, published, state } = setup();
    controller.enable('sess_1');
    m.expect(of(state([call])).pipe(pausePoint('after_tools', ports), summary), '^--!').toBeObservable('---');
    m.flush();
    expect(published.map(labelOf)).toEqual(['paused:after_tools', 'resumed:cancelled']);
    expect(published[1]?.at).toBe(3);
    expect(controller.pending()).toEqual([]);
  }));

  it('should validate edits against the schema of the tool each call names', marbles((m) => {
    const { controller, ports, state } = setup();
    controller.enable('sess_1');
    of(state([call])).pipe(pausePoint('after_inference', ports)).subscribe();
    expect(controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1: { text: ['x'] } } })).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', details: { edits: { call_1: ['text: Invalid input: expected string, received array'] } } },
    });
    m.expect(NEVER).toBeObservable('');
  }));

  it('should unsubscribe from the pause when it is continued, and from its source when that completes', marbles((m) => {
    const { controller, ports, pauses, state } = setupProbed(m);
    const source = m.hot<LoopState>('-s----|', { s: state([call]) });
    m.expect(source.pipe(pausePoint('after_inference', ports), summary)).toBeObservable('----a-|', { a: 'open:continue' });
    m.scheduler.schedule(() => controller.submit({ pause_id: 'pause_1' }), 4);
    m.expect(source).toHaveSubscriptions('^-----!');
    m.expect(pauses.log).toHaveSubscriptions('-^--!');
  }));

  it('should unsubscribe from the pause when its deadline resolves it', marbles((m) => {
    const { ports, pauses, state } = setupProbed(m, { pauseTimeoutMs: 3 });
    const source = m.hot<LoopState>('-s----|', { s: state([call]) });
    m.expect(source.pipe(pausePoint('after_inference', ports), summary)).toBeObservable('----a-|', { a: 'open:continue' });
    m.expect(pauses.log).toHaveSubscriptions('-^--!');
  }));

  it('should unsubscribe from the pause, resolving it as cancelled, when its source errors', marbles((m) => {
    const { ports, pauses, published, state } = setupProbed(m);
    const source = m.hot<LoopState>('-s-#', { s: state([call]) });
    m.expect(source.pipe(pausePoint('after_tools', ports), summary)).toBeObservable('---#');
    m.expect(source).toHaveSubscriptions('^--!');
    m.expect(pauses.log).toHaveSubscriptions('-^-!');
    m.flush();
    expect(published.map(labelOf)).toEqual(['paused:after_tools', 'resumed:cancelled']);
  }));

  it('should unsubscribe from its source and the pause when unsubscribed (cancelled)', marbles((m) => {
    const { controller, ports, pauses, state } = setupProbed(m);
    const source = m.hot<LoopState>('-s------|', { s: state([call]) });
    m.expect(source.pipe(pausePoint('after_tools', ports), summary), '^---!').toBeObservable('-----');
    m.expect(source).toHaveSubscriptions('^---!');
    m.expect(pauses.log).toHaveSubscriptions('-^--!');
    m.flush();
    expect(controller.pending()).toEqual([]);
  }));
});
