import { firstValueFrom, type SchedulerLike } from 'rxjs';
import { createSequentialIds } from '../../src/core/ids.js';
import { covers, createGrantBook, type GrantTarget } from '../../src/sessions/grant-book.js';
import { createMemoryGrants } from '../../src/store/memory-grants.js';

/** A clock the test moves by hand: only `now` is read by the book. */
function manualClock(start = 1_000) {
  let now = start;
  return { scheduler: { now: () => now } as unknown as SchedulerLike, advance: (ms: number) => void (now += ms) };
}

const target: GrantTarget = { conv_id: 'c1', owner: 'alice', profile: 'support' };

describe('createGrantBook', () => {
  function bookAt(targets: Record<string, GrantTarget> = { c1: target }) {
    const clock = manualClock();
    const book = createGrantBook({ store: createMemoryGrants(), scheduler: clock.scheduler, ids: createSequentialIds(), targetOf: (convId) => targets[convId] });
    return { book, clock };
  }

  it('should cover calls until ttl_ms has passed, then neither cover nor list the grant', async () => {
    const { book, clock } = bookAt();
    const grant = await book.remember(target, { scope: 'conversation', tools: ['echo'], ttl_ms: 500 }, 'alice');
    expect(grant).toMatchObject({ scope: 'conversation', conv_id: 'c1', tools: ['echo'], created_at: 1_000, expires_at: 1_500, by: 'alice', owner: 'alice' });
    expect(await firstValueFrom(book.covering('c1', ['echo', 'add']))).toEqual([grant.grant_id, undefined]);
    clock.advance(499);
    expect(await firstValueFrom(book.covering('c1', ['echo']))).toEqual([grant.grant_id]);
    expect(await book.live()).toEqual([grant]);
    clock.advance(1);
    expect(await firstValueFrom(book.covering('c1', ['echo']))).toEqual([undefined]);
    expect(await book.live()).toEqual([]);
  });

  it('should keep a grant without ttl_ms until it is revoked', async () => {
    const { book, clock } = bookAt();
    const grant = await book.remember(target, { scope: 'server', tools: ['echo'] }, 'alice');
    expect(grant.expires_at).toBeUndefined();
    clock.advance(10 * 365 * 24 * 3600 * 1000);
    expect(await firstValueFrom(book.covering('c1', ['echo']))).toEqual([grant.grant_id]);
    expect(await book.revoke(grant.grant_id)).toBe(true);
    expect(await firstValueFrom(book.covering('c1', ['echo']))).toEqual([undefined]);
    expect(await book.revoke(grant.grant_id)).toBe(false);
  });

  it('should cover nothing in a conversation this runtime does not hold', async () => {
    const { book } = bookAt({});
    await book.remember(target, { scope: 'server', tools: ['echo'] }, 'alice');
    expect(await firstValueFrom(book.covering('elsewhere', ['echo']))).toEqual([undefined]);
  });

  it('should refuse tools that are not grantable and a profile scope without a profile', () => {
    const { book } = bookAt();
    const issues = book.issues({ conv_id: 'c2' }, { scope: 'profile', tools: ['echo', 'rm'] }, (name) => name !== 'rm');
    expect(issues.map((issue) => issue.field)).toEqual(['remember.tools', 'remember.scope']);
    expect(book.issues(target, { scope: 'profile', tools: ['echo'] }, () => true)).toEqual([]);
  });
});

describe('covers', () => {
  const base = { grant_id: 'g', tools: ['echo'], by: 'alice', owner: 'alice', created_at: 0 };
  it('should apply each scope to its conversations, and only to its owner', () => {
    expect(covers({ ...base, scope: 'conversation', conv_id: 'c1' }, target, 'echo', 1)).toBe(true);
    expect(covers({ ...base, scope: 'conversation', conv_id: 'c2' }, target, 'echo', 1)).toBe(false);
    expect(covers({ ...base, scope: 'profile', profile: 'support' }, target, 'echo', 1)).toBe(true);
    expect(covers({ ...base, scope: 'profile', profile: 'sales' }, target, 'echo', 1)).toBe(false);
    expect(covers({ ...base, scope: 'server' }, target, 'echo', 1)).toBe(true);
    expect(covers({ ...base, scope: 'server' }, target, 'add', 1)).toBe(false);
    expect(covers({ ...base, scope: 'server', owner: 'bob' }, target, 'echo', 1)).toBe(false);
    expect(covers({ ...base, scope: 'server', expires_at: 1 }, target, 'echo', 1)).toBe(false);
  });
});
