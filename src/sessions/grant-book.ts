import { catchError, map, of, type Observable, type SchedulerLike } from 'rxjs';
import type { GrantPort, GrantRecord, GrantStore, Remember } from '../core/grants.js';
import type { IdSource } from '../core/ids.js';

/** What a grant is checked against: the conversation a call runs in. */
export interface GrantTarget {
  readonly conv_id: string;
  readonly owner?: string;
  readonly profile?: string;
}

export interface GrantBookPorts {
  readonly store: GrantStore;
  /** The clock of `created_at` and expiry: virtual in tests. */
  readonly scheduler: SchedulerLike;
  readonly ids: IdSource;
  /** The conversation's owner and profile, when this runtime holds it. */
  readonly targetOf: (convId: string) => GrantTarget | undefined;
}

/** Why a `remember` cannot be granted: `[{field, message}]`, as a 400 lists them. */
export type GrantIssue = { readonly field: string; readonly message: string };

/** The runtime's grants (docs/protocol.md, Grants): made from a decision, listed, revoked, and consulted by the loop. */
export interface GrantBook extends GrantPort {
  /** What is wrong with remembering this in that conversation (tools that are not grantable, a profile scope without a profile). */
  issues(target: GrantTarget, remember: Remember, isGrantable: (name: string) => boolean): GrantIssue[];
  /** Makes and stores the grant; resolves once it is committed. */
  remember(target: GrantTarget, remember: Remember, by: string): Promise<GrantRecord>;
  /** The live grants (not expired), oldest first. */
  live(): Promise<GrantRecord[]>;
  revoke(grantId: string): Promise<boolean>;
}

/** Whether `grant` lets a call of `name` in `target` run without a pause at `now`. */
export function covers(grant: GrantRecord, target: GrantTarget, name: string, now: number): boolean {
  if (grant.expires_at !== undefined && now >= grant.expires_at) return false;
  // A grant approves only its owner's calls: another user's conversation always asks.
  if (grant.owner !== target.owner || !grant.tools.includes(name)) return false;
  if (grant.scope === 'conversation') return grant.conv_id === target.conv_id;
  if (grant.scope === 'profile') return grant.profile !== undefined && grant.profile === target.profile;
  return true;
}

export function createGrantBook(ports: GrantBookPorts): GrantBook {
  const { store, scheduler, ids } = ports;
  const live = (grants: readonly GrantRecord[]): GrantRecord[] => {
    const now = scheduler.now();
    return grants.filter((grant) => grant.expires_at === undefined || now < grant.expires_at);
  };
  return {
    issues: (target, remember, isGrantable) => {
      const found: GrantIssue[] = [];
      const refused = remember.tools.filter((name) => !isGrantable(name));
      if (refused.length > 0) found.push({ field: 'remember.tools', message: `not grantable (it always asks): ${refused.join(', ')}` });
      if (remember.scope === 'profile' && target.profile === undefined) {
        found.push({ field: 'remember.scope', message: `conversation "${target.conv_id}" has no profile` });
      }
      return found;
    },
    remember: async (target, remember, by) => {
      const created_at = scheduler.now();
      const grant: GrantRecord = {
        grant_id: ids.next('grant'),
        scope: remember.scope,
        tools: [...new Set(remember.tools)],
        ...(remember.scope === 'conversation' ? { conv_id: target.conv_id } : {}),
        ...(remember.scope === 'profile' && target.profile !== undefined ? { profile: target.profile } : {}),
        ...(remember.ttl_ms === undefined ? {} : { expires_at: created_at + remember.ttl_ms }),
        by,
        created_at,
        ...(target.owner === undefined ? {} : { owner: target.owner }),
      };
      await store.put(grant);
      return grant;
    },
    live: () => new Promise((resolve, reject) => store.list$().subscribe({ next: (grants) => resolve(live(grants)), error: reject })),
    revoke: (grantId) => store.remove(grantId),
    covering: (convId, names): Observable<readonly (string | undefined)[]> => {
      const target = ports.targetOf(convId);
      const none = names.map(() => undefined);
      if (!target) return of(none);
      return store.list$().pipe(
        map((grants) => {
          const now = scheduler.now();
          return names.map((name) => grants.find((grant) => covers(grant, target, name, now))?.grant_id);
        }),
        // A store that cannot answer approves nothing: the run pauses, as it would without grants.
        catchError(() => of(none)),
      );
    },
  };
}

/** What a grant is checked against in a session's conversation; undefined without a session. */
export const grantTargetOf = (session: { readonly conv_id: string; readonly owner?: string; readonly profile?: string } | undefined): GrantTarget | undefined =>
  session && {
    conv_id: session.conv_id,
    ...(session.owner === undefined ? {} : { owner: session.owner }),
    ...(session.profile === undefined ? {} : { profile: session.profile }),
  };

/** A grant as it is shown: whose conversations it covers stays the server's. */
export const publicGrant = ({ owner: _owner, ...grant }: GrantRecord): Omit<GrantRecord, 'owner'> => grant;
