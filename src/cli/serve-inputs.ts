import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Engine } from '../core/engine.js';
import { createScriptedEngine, parseScript, type Script } from '../engines/scripted.js';
import { selectEngine, type EngineChoice, type EngineSelection } from '../engines/select-engine.js';
import type { McpServers } from '../mcp/index.js';
import { parseTokens } from '../server/auth.js';
import type { Profile } from '../server/profiles.js';
import type { Tool, ToolDefinition } from '../tools/define-tool.js';
import { agentFromFile, isAgentEntry } from '../tools/agents-from-file.js';
import { toTool } from '../tools/to-tool.js';
import { createDemoScript, createDemoTools } from './demo.js';
import { isLoopback, type Env, type ServeOptions } from './options.js';
import { readProfilesFile, toProfiles } from './profiles-file.js';

/** What a server is made of before it opens its store: its tokens, engine, tools, MCP servers and profiles. */
export interface ServeInputs {
  /** token → user. */
  readonly tokens: Map<string, string>;
  readonly engine: Engine;
  /** The tools file's, or the demo's. */
  readonly ownTools: readonly Tool[];
  /** Those and the MCP servers'. */
  readonly tools: readonly Tool[];
  readonly mcp: McpServers | undefined;
  readonly profiles: readonly Profile[];
}

/**
 * Reads every file the flags name and builds the engines, refusing a non-loopback host without tokens
 * before anything starts. Throws with a message naming the flag and the file at fault.
 */
export async function loadServeInputs(options: ServeOptions, env: Env): Promise<ServeInputs> {
  const tokens = await loadTokens(options, env);
  if (tokens.size === 0 && !isLoopback(options.host) && !options.insecureNoAuth) {
    throw new Error(
      `refusing to listen on ${options.host} without auth tokens: set STEPWISE_AUTH_TOKENS or --auth-tokens FILE, or pass --insecure-no-auth`,
    );
  }
  const script = options.script ? await loadScript(options.script) : undefined;
  const { engine, scripted } = await buildEngine(options, env, script, {});
  const ownTools = await chooseTools(options, scripted);
  // MCP's SDK is imported only when asked for: loading it would weigh on every start.
  const mcp = options.mcp ? await (await import('./mcp-file.js')).startMcpServers(options.mcp, ownTools) : undefined;
  const tools = [...ownTools, ...(mcp?.tools ?? [])];
  const profileEngine: ProfileEngineOf = async (choice, slug) => (await buildEngine(options, env, script, choice, slug)).engine;
  const profiles = options.profiles ? await loadProfiles(options.profiles, tools, profileEngine) : [];
  return { tokens, engine, ownTools, tools, mcp, profiles };
}

/** The bearer tokens of STEPWISE_AUTH_TOKENS and `--auth-tokens FILE`, the file's winning. */
async function loadTokens(options: ServeOptions, env: Env): Promise<Map<string, string>> {
  const fromEnv = env['STEPWISE_AUTH_TOKENS'] ? parseTokens(env['STEPWISE_AUTH_TOKENS']) : new Map<string, string>();
  if (!options.authTokens) return fromEnv;
  const fromFile = parseTokens(await readFile(options.authTokens, 'utf8'));
  return new Map([...fromEnv, ...fromFile]);
}

/** A selected engine, and whether it is the scripted one (the demo's tools go with it). */
interface BuiltEngine {
  readonly engine: Engine;
  readonly scripted: boolean;
}

/**
 * The server's engine, or a profile's (`choice` from its `engine` and `model`, on top of the flags).
 * Says what it picked and why. Scripted engines play `--script` when given, else the demo script.
 */
async function buildEngine(options: ServeOptions, env: Env, script: Script | undefined, choice: EngineChoices, slug?: string): Promise<BuiltEngine> {
  const who = slug === undefined ? '' : `profile ${slug}: `;
  const model = choice.model ?? options.model;
  let selection: EngineSelection;
  try {
    selection = await selectEngine({
      engine: choice.engine ?? options.engine,
      env,
      ...(model ? { model } : {}),
      ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    });
  } catch (error) {
    throw new Error(`${who}${(error as Error).message}`);
  }
  if (selection.kind !== 'scripted') {
    console.log(`${who}${selection.reason}`);
    return { engine: selection.engine, scripted: false };
  }
  if (!script) {
    console.log(`${who}${selection.reason}${options.tools ? ' (tools from --tools)' : ''}`);
    return { engine: createScriptedEngine(createDemoScript()), scripted: true };
  }
  console.log(`${who}engine scripted: ${script.responses.length} responses from ${options.script}`);
  return { engine: createScriptedEngine(script), scripted: true };
}

async function loadScript(file: string): Promise<Script> {
  try {
    return parseScript(JSON.parse(await readFile(file, 'utf8')) as unknown);
  } catch (error) {
    throw new Error(`--script ${file}: ${(error as Error).message}`);
  }
}

/** `GET /tools`'s `source` of each tool not built in: the tools file's, each MCP server's. */
export function toolSourcesOf(fileTools: readonly Tool[], servers: readonly { name: string; tools: readonly string[] }[]): Map<string, string> {
  const sources = new Map<string, string>(fileTools.map((tool) => [tool.name, 'tools-file']));
  for (const server of servers) for (const name of server.tools) sources.set(name, `mcp:${server.name}`);
  return sources;
}

/**
 * `--tools FILE` when given; else the demo tools with the scripted demo, or for a real model only when
 * `--demo-tools` asks (a real model must not be offered a fake `get_weather` by surprise).
 */
async function chooseTools(options: ServeOptions, scripted: boolean): Promise<Tool[]> {
  if (options.tools) return loadTools(options.tools);
  if (scripted || options.demoTools) return createDemoTools();
  console.log('tools: none (a real model is offered the demo tools only with --demo-tools; your own with --tools FILE)');
  return [];
}

type EngineChoices = { readonly engine?: EngineChoice; readonly model?: string };
type ProfileEngineOf = (choice: EngineChoices, slug: string) => Promise<Engine>;

/** `--profiles FILE`: checked against the server's tools, each profile's own engine built now. */
async function loadProfiles(file: string, tools: readonly Tool[], engineOf: ProfileEngineOf): Promise<Profile[]> {
  const entries = await readProfilesFile(file, tools.map((tool) => tool.name));
  const profiles = await toProfiles(entries, async (choice, slug) => {
    try {
      return await engineOf(choice, slug);
    } catch (error) {
      throw new Error(`--profiles ${file}: ${(error as Error).message}`);
    }
  });
  console.log(`profiles: ${profiles.map((profile) => profile.slug).join(', ') || 'none'} from ${file}`);
  return profiles;
}

/** A tools file: an ES module whose default export is an array of tools (docs/protocol.md, Tools file). */
async function loadTools(file: string): Promise<Tool[]> {
  const module = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  if (!Array.isArray(module.default)) throw new Error(`--tools ${file}: the default export must be an array of tools`);
  // Agents last, in their order: an agent names the file's tools and the agents before it as its own.
  const tools = module.default.filter((candidate) => !isAgentEntry(candidate)).map((candidate: unknown) => toTool(candidate as Tool | ToolDefinition));
  for (const entry of module.default.filter(isAgentEntry)) tools.push(agentFromFile(entry, tools));
  return tools;
}
