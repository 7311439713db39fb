import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { Engine } from '../core/engine.js';
import { ENGINE_CHOICES, type EngineChoice } from '../engines/select-engine.js';
import type { Profile } from '../server/profiles.js';

/** The `/chat` overrides a profile may allow by name (docs/protocol.md, HTTP routes). */
export const OVERRIDE_NAMES = ['step_mode', 'tools', 'system_prompt', 'max_iterations'] as const;

const profileSchema = z.strictObject({
  description: z.string().optional(),
  system_prompt: z.string().optional(),
  tools: z.array(z.string().min(1)).optional(),
  engine: z.enum(ENGINE_CHOICES as [EngineChoice, ...EngineChoice[]]).optional(),
  model: z.string().min(1).optional(),
  max_iterations: z.number().int().min(1).max(1000).optional(),
  allow_overrides: z.union([z.boolean(), z.array(z.enum(OVERRIDE_NAMES))]).optional(),
});

/** Slugs are path segments of `POST /chat/:profile`. */
const SLUG = /^[A-Za-z0-9_-]{1,64}$/;

const fileSchema = z.strictObject({
  profiles: z.record(z.string().regex(SLUG, 'a profile slug must match [A-Za-z0-9_-]{1,64}'), profileSchema),
});

/** One profile as the file states it, before its engine is built. */
export type ProfileEntry = z.infer<typeof profileSchema> & { readonly slug: string };

/** Builds a profile's own engine from its `engine` and `model` (the CLI's engine selection). */
export type ProfileEngineFactory = (choice: { readonly engine?: EngineChoice; readonly model?: string }, slug: string) => Promise<Engine>;

/**
 * Reads and checks a `--profiles FILE` (docs/protocol.md, Profiles file). Every problem names the file and the field
 * (`profiles.research.max_iterations: …`), so a bad file fails at start and not at the first chat.
 */
export async function readProfilesFile(file: string, knownTools: readonly string[]): Promise<ProfileEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`--profiles ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`--profiles ${file}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`);
    throw new Error(`--profiles ${file}: invalid profiles file\n${lines.join('\n')}`);
  }
  const entries = Object.entries(parsed.data.profiles).map(([slug, profile]) => ({ slug, ...profile }));
  const known = new Set(knownTools);
  const unknown = entries.flatMap((entry) =>
    (entry.tools ?? []).flatMap((name, i) => (known.has(name) ? [] : [`  profiles.${entry.slug}.tools.${i}: unknown tool "${name}"`])),
  );
  if (unknown.length > 0) {
    throw new Error(`--profiles ${file}: invalid profiles file\n${unknown.join('\n')}\n  (the server's tools: ${knownTools.join(', ') || 'none'})`);
  }
  return entries;
}

/** The server's `Profile`s: each with its own engine when the file names `engine` or `model`. */
export async function toProfiles(entries: readonly ProfileEntry[], buildEngine: ProfileEngineFactory): Promise<Profile[]> {
  const profiles: Profile[] = [];
  for (const { slug, engine, model, ...rest } of entries) {
    const own = engine !== undefined || model !== undefined;
    const choice = { ...(engine === undefined ? {} : { engine }), ...(model === undefined ? {} : { model }) };
    profiles.push({ slug, ...rest, ...(own ? { engine: await buildEngine(choice, slug) } : {}) });
  }
  return profiles;
}
