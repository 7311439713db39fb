import { send, sendRetrying, type Outcome } from './http.js';
import type { ListedPause } from './operators.js';
import type { Service } from './service.js';

/** A frame as `/hydrate` returns it (docs/protocol.md, "Frames"). */
export type Frame = { readonly type: string; readonly id: string; readonly seq: number; readonly [field: string]: any };

/** A row of `GET /conversations/:conv_id/decisions`. */
export interface AuditRow {
  readonly pause_id: string;
  readonly phase: string;
  readonly reason: string;
  readonly by?: string;
  readonly tool_call_ids?: readonly string[];
  readonly edits?: Readonly<Record<string, { before: unknown; after: unknown }>>;
}

/** What the service says about one conversation at the end. */
export interface Collected {
  readonly conv_id: string;
  /** Every frame of its log, paged through; undefined when `/hydrate` could not be read. */
  readonly frames: readonly Frame[] | undefined;
  readonly last_seq: number | undefined;
  readonly audit: readonly AuditRow[] | undefined;
  /** The instance whose `/hydrate` answered (its last page). */
  readonly from: number | undefined;
  /** Why a read failed, for the report. */
  readonly errors: readonly string[];
}

const READ_BUDGET_MS = 20_000;
const CONCURRENCY = 16;
/** A listing of the whole service (every pause, every conversation) grows with the runs: 100 000 take seconds. */
export const LISTING_TIMEOUT_MS = 120_000;

export interface CollectConfig {
  readonly service: Service;
  readonly onRetry: (cause: string) => void;
}

/** Reads every conversation's log and audit trail (any instance answers for any conversation). */
export async function collect(config: CollectConfig, convIds: readonly string[]): Promise<Map<string, Collected>> {
  const results = new Map<string, Collected>();
  const queue = [...convIds];
  const worker = async (): Promise<void> => {
    for (let convId = queue.shift(); convId !== undefined; convId = queue.shift()) results.set(convId, await collectOne(config, convId));
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return results;
}

async function collectOne(config: CollectConfig, convId: string): Promise<Collected> {
  const errors: string[] = [];
  const hydrated = await hydrate(config, convId, errors);
  const audit = await read(config, `/conversations/${convId}/decisions`, errors);
  return { conv_id: convId, ...hydrated, audit: audit?.decisions as AuditRow[] | undefined, errors };
}

/** `/hydrate` pages until its last frame reaches `last_seq` (docs/protocol.md, "HTTP routes"). */
async function hydrate(config: CollectConfig, convId: string, errors: string[]): Promise<{ frames: Frame[] | undefined; last_seq: number | undefined; from: number | undefined }> {
  const frames: Frame[] = [];
  for (let since = 0; ; ) {
    const answered: { instance?: number } = {};
    const page = await read(config, `/hydrate?conv_id=${convId}&since_seq=${since}`, errors, answered);
    if (!page) return { frames: undefined, last_seq: undefined, from: undefined };
    const got = (page.frames as unknown[]).map(unwrap);
    frames.push(...got);
    const lastSeq = page.last_seq as number;
    const reached = got.at(-1)?.seq ?? since;
    if (got.length === 0 || reached >= lastSeq) return { frames, last_seq: lastSeq, from: answered.instance };
    since = reached;
  }
}

/** The service's pending pauses, as any instance lists them. */
export async function pendingPauses(config: CollectConfig): Promise<ListedPause[] | undefined> {
  const errors: string[] = [];
  const listed = await read(config, '/debug/pauses', errors, {}, LISTING_TIMEOUT_MS);
  return listed?.pauses as ListedPause[] | undefined;
}

/**
 * Pause id -> the instances that list it as pending, asking every live instance: an instance that
 * still lists a pause the others resolved is worth knowing when a decision looks lost.
 */
export async function pendingEverywhere(config: CollectConfig): Promise<Map<string, number[]>> {
  const listed = new Map<string, number[]>();
  for (const instance of config.service.instances.filter((i) => config.service.isAlive(i.index))) {
    const outcome = await send(instance, 'GET', '/debug/pauses', undefined, LISTING_TIMEOUT_MS);
    for (const pause of outcome.status === 200 ? (outcome.body.pauses as ListedPause[]) : []) {
      listed.set(pause.pause_id, [...(listed.get(pause.pause_id) ?? []), instance.index]);
    }
  }
  return listed;
}

/** The conversations the service says still have a run going; undefined when it could not say. */
export async function runningConversations(config: CollectConfig): Promise<Set<string> | undefined> {
  const listed = await read(config, '/conversations', [], {}, LISTING_TIMEOUT_MS);
  if (!listed) return undefined;
  return new Set((listed.conversations as { conv_id: string; running: boolean }[]).filter((c) => c.running).map((c) => c.conv_id));
}

async function read(config: CollectConfig, path: string, errors: string[], answered: { instance?: number } = {}, timeoutMs?: number): Promise<any> {
  const budgetMs = Math.max(READ_BUDGET_MS, timeoutMs ?? 0);
  const attempts = await sendRetrying(config.service, 'GET', path, undefined, { budgetMs, onRetry: config.onRetry, ...(timeoutMs ? { timeoutMs } : {}) });
  const last = attempts.at(-1) as Outcome;
  answered.instance = last.instance;
  if (last.status === 200) return last.body;
  errors.push(`GET ${path} on instance ${last.instance}: ${last.status ?? last.failure} ${JSON.stringify(last.body?.error ?? '')}`);
  return undefined;
}

/** A hydrated frame as the event the WebSocket carried (`{sem, event}` or the event itself). */
const unwrap = (frame: unknown): Frame => ((frame as { event?: Frame }).event ?? frame) as Frame;
