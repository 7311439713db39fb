import type { Request, Response, Router } from 'express';
import { loadExpress } from './server-deps.js';
import { z } from 'zod';
import { RunInProgressError, type RunHandle, type Session } from '../sessions/session.js';
import { callerFrom, type Caller } from './auth.js';
import type { CancelCommand } from '../core/commands.js';
import { commandRoute, committed, convIdOf } from './commands.js';
import { assertOwner, convIdSchema, type ServerContext } from './context.js';
import { HttpError, invalidRequest, notFound, parseOr400 } from './errors.js';
import { forbiddenOverrides, PROFILE_OVERRIDES, profileChoices, toolsOutside, type Profile } from './profiles.js';

const chatSchema = z.object({
  prompt: z.string().min(1, 'prompt must be a non-empty string'),
  conv_id: convIdSchema.optional(),
  overrides: z
    .strictObject({
      step_mode: z.boolean().optional(),
      tools: z.array(z.string()).optional(),
      system_prompt: z.string().optional(),
      max_iterations: z.number().int().min(1).max(1000).optional(),
    })
    .optional(),
});


export type ChatBody = z.infer<typeof chatSchema>;

const cancelSchema = z.object({ conv_id: convIdSchema });


/** `POST /chat`, `POST /chat/cancel` and `POST /chat/:profile` (docs/protocol.md, Profiles file). */
export function chatRoutes(context: ServerContext): Router {
  const router = loadExpress().Router();
  router.post('/chat', (req, res) => startChat(context, req, res));
  router.post('/chat/cancel', commandRoute(context, (req): CancelCommand => ({ type: 'cancel', ...parseOr400(cancelSchema, req.body) }), convIdOf));
  // After /chat/cancel, which keeps its meaning: no profile may be called `cancel`.
  router.post('/chat/:profile', (req, res) => startChat(context, req, res, req.params['profile']));
  return router;
}

async function startChat(context: ServerContext, req: Request, res: Response, slug?: string): Promise<void> {
  const { identity, handle } = await startRun(context, callerFrom(res), parseOr400(chatSchema, req.body), slug);
  res.json({ ...identity, turn_id: handle.turn_id, inference_id: handle.inference_id });
}

/** A run started as `POST /chat` starts it; also what the AG-UI and AI SDK routes start their runs with. */
export interface StartedRun {
  readonly identity: { readonly conv_id: string; readonly session_id: string };
  readonly handle: RunHandle;
  /** The conversation's newest committed seq just before the run started: its frames come after it. */
  readonly since_seq: number;
}

/**
 * Starts a run with the checks and effects of `POST /chat` (claim, owner, profile, overrides, step mode),
 * resolving once its start is committed. Refusals are thrown `HttpError`s.
 */
export async function startRun(context: ServerContext, caller: Caller, body: ChatBody, slug?: string): Promise<StartedRun> {
  // The run is claimed first (docs/protocol.md, Several instances): 409 while another instance runs
  // it, and the conversation as the store has it when another instance ran it before.
  const claimed = body.conv_id === undefined ? undefined : await context.stepwise.claim(body.conv_id);
  const { registry, controller } = context.stepwise;
  const overrides = body.overrides ?? {};
  const existing = existingSession(context, caller, body);
  const profile = profileOf(context, existing, slug);
  if (overrides.step_mode === true && !context.debug) {
    throw new HttpError(403, 'debug_disabled', 'step mode needs debug mode (start the server with --debug)');
  }
  // Checked before the conversation is created, so a refused request leaves nothing behind.
  assertOverridesAllowed(profile, overrides);
  const unknown = overrides.tools ? registry.unknown(overrides.tools) : [];
  if (unknown.length > 0) {
    throw invalidRequest(
      unknown.map((name) => ({ field: 'overrides.tools', message: `unknown tool "${name}"` })),
      `unknown tool names: ${unknown.join(', ')} (known: ${registry.names().join(', ') || 'none'})`,
    );
  }
  assertToolsOffered(profile, overrides.tools ?? []);
  const session = openSession(context, caller, body, existing, profile);
  const identity = { conv_id: session.conv_id, session_id: session.session_id };
  if (claimed === false || session.running) throw runInProgress(identity);
  // A new conversation's lease before its run writes anything (its writes are fenced by it).
  if (claimed === undefined) await context.stepwise.claim(session.conv_id);
  if (session.running) throw runInProgress(identity);
  // Already on: left as it is, so a filter set over /debug/step/enable survives a client that always sends step_mode.
  if (overrides.step_mode === true && !controller.isEnabled(session.session_id)) controller.enable(session.session_id);
  if (overrides.step_mode === false && context.debug) controller.disable(session.session_id);
  try {
    const since_seq = context.stepwise.frames.lastSeq(session.conv_id);
    const handle = session.start({
      prompt: body.prompt,
      overrides: {
        ...(overrides.tools ? { tools: overrides.tools } : {}),
        ...(overrides.system_prompt !== undefined ? { system_prompt: overrides.system_prompt } : {}),
        ...(overrides.max_iterations !== undefined ? { max_iterations: overrides.max_iterations } : {}),
      },
    });
    // A 200 means the conversation and its run's start are stored: any instance then knows them (a
    // client joining another instance a moment later must not create the conversation anew).
    await committed(context, session.conv_id);
    return { identity, handle, since_seq };
  } catch (error) {
    if (error instanceof RunInProgressError) throw runInProgress(identity);
    throw error;
  }
}

function existingSession(context: ServerContext, caller: Caller, body: ChatBody): Session | undefined {
  const existing = body.conv_id === undefined ? undefined : context.stepwise.sessions.get(body.conv_id);
  if (existing) assertOwner(caller, existing);
  return existing;
}

/**
 * The profile a chat runs with: the one named in the path, else the conversation's. A conversation
 * keeps its profile: naming another one is 409 `profile_mismatch`, and so is naming one for a
 * conversation that already ran without. A conversation that never ran (joined over the
 * WebSocket before its first chat) takes the profile it is first started with.
 */
function profileOf(context: ServerContext, existing: Session | undefined, slug: string | undefined): Profile | undefined {
  if (slug === undefined) return existing?.profile === undefined ? undefined : context.profiles.get(existing.profile);
  const profile = context.profiles.get(slug);
  if (!profile) {
    const known = [...context.profiles.keys()].join(', ') || 'none';
    throw notFound(`no profile "${slug}" (known: ${known})`, 'unknown_profile');
  }
  const started = existing !== undefined && (existing.running || existing.turns().length > 0);
  if (existing && existing.profile !== slug && (existing.profile !== undefined || started)) {
    const current = existing.profile ?? null;
    throw new HttpError(
      409,
      'profile_mismatch',
      `conversation ${existing.conv_id} ${current === null ? 'started without a profile' : `has profile "${current}"`}; it keeps it (start a new conversation for "${slug}")`,
      { conv_id: existing.conv_id, profile: current, requested: slug },
    );
  }
  return profile;
}

/** 403 `overrides_forbidden` for overrides the profile does not allow. */
function assertOverridesAllowed(profile: Profile | undefined, overrides: NonNullable<ChatBody['overrides']>): void {
  if (!profile) return;
  const requested = PROFILE_OVERRIDES.filter((name) => overrides[name] !== undefined);
  const forbidden = forbiddenOverrides(profile, requested);
  if (forbidden.length > 0) {
    throw new HttpError(403, 'overrides_forbidden', `profile "${profile.slug}" does not allow the overrides: ${forbidden.join(', ')}`, {
      profile: profile.slug,
      overrides: forbidden,
    });
  }
}

/** 403 `overrides_forbidden` for known tools beyond the profile's own: a run may narrow its list, not widen it. */
function assertToolsOffered(profile: Profile | undefined, tools: readonly string[]): void {
  const outside = toolsOutside(profile, tools);
  if (profile && outside.length > 0) {
    throw new HttpError(403, 'overrides_forbidden', `profile "${profile.slug}" does not offer the tools: ${outside.join(', ')}`, {
      profile: profile.slug,
      tools: outside,
    });
  }
}

/** The conversation's session: created with the profile, or an unstarted one taking it now. */
function openSession(context: ServerContext, caller: Caller, body: ChatBody, existing: Session | undefined, profile: Profile | undefined): Session {
  if (existing) {
    if (profile && existing.profile !== profile.slug) existing.configure(profileChoices(profile));
    return existing;
  }
  return context.stepwise.sessions.open({
    ...(body.conv_id ? { conv_id: body.conv_id } : {}),
    ...(caller.user ? { owner: caller.user } : {}),
    ...(profile ? profileChoices(profile) : {}),
  });
}

function runInProgress(identity: { conv_id: string; session_id: string }): HttpError {
  return new HttpError(409, 'run_in_progress', `conversation ${identity.conv_id} already has a run in progress`, undefined, identity);
}
