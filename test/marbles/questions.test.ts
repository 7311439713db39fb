import { marbles } from 'rxjs-marbles/jest';
import { map } from 'rxjs';
import { createGrantBook } from '../../src/sessions/grant-book.js';
import { createMemoryGrants } from '../../src/store/memory-grants.js';
import { z } from 'zod';
import {
  answerWith,
  createSequentialIds,
  createStepController,
  createToolRegistry,
  pausePoint,
  type LoopState,
  defineHumanTool,
  UNANSWERED,
  type InferenceRequest,
  type PauseInfo,
  type ScriptedResponse,
  type StepwiseEvent,
  type ToolUseBlock,
} from '../../src/index.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { createTestRuntime, PAUSE_LABELS, recordingEngine, runContext, startAt } from './helpers.js';

/** The question the model asks: a city and a number of nights. */
const ask = defineHumanTool({
  name: 'ask',
  description: 'Asks the user.',
  parameters: z.object({ question: z.string() }),
  answer: z.object({ city: z.string().min(1), nights: z.number().int().positive() }),
});

const asking = (...ids: string[]): ScriptedResponse => ({
  tool_calls: [...ids.map((id) => ({ id, name: 'ask', arguments: { question: `q ${id}` } })), { id: 'e1', name: 'echo', arguments: { text: 'x' } }],
});

const L = { ...PAUSE_LABELS, a: 'resumed:answered', u: 'tool-result:q1', v: 'tool-result:q1:error', w: 'tool-result:e1' } as const;
const isShown = (label: string): boolean => /^(paused|resumed|run-ended|tool-result)/.test(label);

const seenBy = (request: InferenceRequest | undefined) =>
  request?.blocks.filter((block): block is ToolUseBlock => block.kind === 'tool_use').map((block) => block.payload);

describe('questions for a human (docs/protocol.md, Questions for a human)', () => {
  it('should pause at a question with step mode off, refuse a wrong answer without resolving, and resume answered with the answer as the result', marbles((m) => {
    const { engine, requests } = recordingEngine([asking('q1'), { text: 'done' }]);
    const rt = createTestRuntime({ engine, tools: [ask, createVirtualTool()] });
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    // The answer resumes the run at once; the other call of the pause runs as with continue.
    m.expect(rt.labels$(isShown)).toBeObservable('p 4ms (a u w e)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    const { controller } = rt.sw;
    m.scheduler.schedule(() => {
      expect(controller.submit(answerWith('pause_1', { q1: { city: '', nights: 0 } }))).toMatchObject({ ok: false, error: { code: 'invalid_arguments', details: { answers: { q1: expect.any(Array) } } } });
      expect(controller.submit(answerWith('pause_1', { e1: 'not a question' }))).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { e1: { text: 'y' } }, answers: { q1: {} } })).toMatchObject({ ok: false, error: { code: 'invalid_action' } });
      expect(controller.get('pause_1')).toBeDefined();
    }, 2);
    m.scheduler.schedule(() => expect(controller.submit(answerWith('pause_1', { q1: { city: 'Lyon', nights: 2 } }))).toMatchObject({ ok: true }), 5);
    m.flush();
    const pause = events.find((event): event is Extract<StepwiseEvent, { type: 'paused' }> => event.type === 'paused')?.pause as PauseInfo;
    expect(pause).toMatchObject({ kind: 'question', answer_schema: expect.objectContaining({ type: 'object', required: ['city', 'nights'] }) });
    expect(pause.tool_calls.map((call) => [call.id, call.breakpoint, call.answer_schema !== undefined])).toEqual([
      ['q1', true, true],
      ['e1', undefined, false],
    ]);
    expect(seenBy(requests[1])).toEqual([
      { id: 'q1', result: { city: 'Lyon', nights: 2 } },
      { id: 'e1', result: { echoed: 'x' } },
    ]);
  }));

  it('should need every question of the pause answered', marbles((m) => {
    const rt = createTestRuntime({ responses: [asking('q1', 'q2'), { text: 'done' }], tools: [ask, createVirtualTool()] });
    m.expect(rt.labels$((label) => /^(paused|resumed|run-ended)/.test(label))).toBeObservable('p 4ms (ae)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    const { controller } = rt.sw;
    m.scheduler.schedule(() => {
      expect(controller.submit(answerWith('pause_1', { q1: { city: 'Lyon', nights: 1 } }))).toMatchObject({ ok: false, error: { code: 'invalid_arguments', details: { answers: { q2: expect.any(Array) } } } });
    }, 2);
    m.scheduler.schedule(() => controller.submit(answerWith('pause_1', { q1: { city: 'Lyon', nights: 1 }, q2: { city: 'Nice', nights: 3 } })), 5);
  }));

  it('should give the model an unanswered error when the deadline passes, and refuse answer at a pause without a question', marbles((m) => {
    const { engine, requests } = recordingEngine([asking('q1'), { text: 'done' }]);
    const rt = createTestRuntime({ engine, tools: [ask, createVirtualTool()], pauseTimeoutMs: 1000 });
    m.expect(rt.labels$(isShown)).toBeObservable('p 999ms (t v w e)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(seenBy(requests[1])?.[0]).toEqual({ id: 'q1', result: null, error: UNANSWERED });

    const plain = createTestRuntime({ responses: [{ tool_calls: [{ id: 'e1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }], stepMode: true });
    startAt(m, 0, () => plain.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => expect(plain.sw.controller.submit(answerWith('pause_1', { e1: 1 }))).toMatchObject({ ok: false, error: { code: 'invalid_action' } }), 1);
    m.flush();
  }));

  it('should pause at a question even with step mode off and a grant naming its tool', marbles((m) => {
    const published: StepwiseEvent[] = [];
    const publish = (event: StepwiseEvent) => void published.push(event);
    const ids = createSequentialIds();
    const controller = createStepController({ ids, publish, scheduler: m.scheduler, resumeScheduler: m.scheduler }, { pauseTimeoutMs: 100 });
    const store = createMemoryGrants();
    // Written to the store directly: `remember` itself refuses a tool that is not grantable.
    void store.put({ grant_id: 'g1', scope: 'conversation', conv_id: 'c1', tools: ['ask'], by: 'alice', created_at: 0 });
    const grants = createGrantBook({ store, scheduler: m.scheduler, ids, targetOf: (conv_id) => ({ conv_id }) });
    const ports = { controller, registry: createToolRegistry([ask]), grants, publish, ids, scheduler: m.scheduler };
    const state: LoopState = { run: runContext(), blocks: [{ id: 'b1', kind: 'tool_call', payload: { id: 'q1', name: 'ask', args: { question: 'x' } } }], iteration: 1 };
    const action = map((s: LoopState) => s.decision?.action ?? '-');
    m.expect(m.cold('a', { a: state }).pipe(pausePoint('after_inference', ports), action)).toBeObservable('100ms t', { t: 'continue' });
    m.flush();
    expect(published.map((event) => event.type)).toEqual(['paused', 'resumed']);
    expect(published[0]).toMatchObject({ pause: { kind: 'question' } });
  }));
});
