import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatFrames, loadChunks, startReplayServer, stream, type ReplayServer } from '../helpers/provider-replay-server.js';
import { ensureBuilt, runCli, startCli, type CliServer } from '../helpers/server-cli.js';
import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

const dir = mkdtempSync(join(tmpdir(), 'stepwise-cli-'));
const scriptFile = join(dir, 'script.json');
const toolsFile = join(dir, 'tools.mjs');
const tokensFile = join(dir, 'tokens.txt');
writeFileSync(
  scriptFile,
  JSON.stringify({
    responses: [{ text: 'Shouting now.', tool_calls: [{ id: 'c1', name: 'shout', arguments: { text: 'hi' } }] }, { text: 'All done.' }],
  }),
);
writeFileSync(
  toolsFile,
  `export default [{
    name: 'shout',
    description: 'Upper-cases a text.',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: ({ text }) => text.toUpperCase(),
  }];\n`,
);
writeFileSync(tokensFile, '# operators\nalice:file-token\n');
const profilesFile = join(dir, 'profiles.json');
writeFileSync(
  profilesFile,
  JSON.stringify({
    profiles: {
      shouter: { description: 'Shouts.', system_prompt: 'Shout.', tools: ['shout'], max_iterations: 3, allow_overrides: ['step_mode'] },
      quiet: { description: 'Its own scripted engine.', engine: 'scripted', allow_overrides: false },
    },
  }),
);

/**
 * Every flag of `stepwise serve` (docs/protocol.md, Command line) this version has, plus --profiles and --demo-tools
 * (written out: the help must not drift).
 */
const SERVE_FLAGS = [
  '--host', '--port', '--engine', '--model', '--base-url', '--script', '--tools', '--demo-tools', '--profiles', '--mcp', '--debug',
  '--pause-timeout-ms', '--pause-timeout-action', '--max-iterations', '--tool-timeout-ms', '--max-parallel-tools',
  '--auth-tokens', '--allowed-origins', '--allowed-hosts', '--webhooks', '--webhook-max-attempts', '--public-url', '--insecure-no-auth', '--store', '--data-dir',
];
const DEFAULTS: Record<string, string> = {
  '--host': '127.0.0.1', '--port': '3000', '--engine': 'auto', '--pause-timeout-ms': '30000', '--pause-timeout-action': 'continue',
  '--max-iterations': '20', '--tool-timeout-ms': '30000', '--max-parallel-tools': '3', '--debug': 'off', '--demo-tools': 'off', '--mcp': 'none', '--store': 'sqlite', '--data-dir': './.stepwise',
  '--webhook-max-attempts': '20',
};

/** The help's flag entries, each with its wrapped lines joined: `--port` -> `--port PORT port to listen on; … Default: 3000.` */
function flagEntries(help: string): Map<string, string> {
  const entries = help.split(/\n(?= {2}-)/).map((entry) => entry.trim().replace(/\s+/g, ' '));
  return new Map(entries.filter((entry) => entry.startsWith('--')).map((entry) => [entry.split(' ')[0] as string, entry]));
}
const ENVIRONMENT = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'STEPWISE_DEBUG', 'STEPWISE_AUTH_TOKENS', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME'];

// Each test starts one or more real processes; on a loaded machine each start takes seconds.
describe('stepwise serve (the CLI)', { timeout: 60_000 }, () => {
  beforeAll(() => ensureBuilt(), 120_000);
  const running: CliServer[] = [];
  afterAll(async () => {
    await Promise.all(running.map((cli) => cli.stop('SIGKILL')));
  });
  const start = async (args: string[], env: Record<string, string> = {}): Promise<CliServer> => {
    const cli = await startCli(args, env);
    running.push(cli);
    return cli;
  };

  it('should print the ready line and run a --script with --tools, pausing until the deadline action', async () => {
    const cli = await start(['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--tools', toolsFile, '--debug', '--pause-timeout-ms', '300', '--pause-timeout-action', 'deny']);
    expect(cli.base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=cli-1`);
    expect((await post(cli.base, '/chat', { prompt: 'x', conv_id: 'cli-1', overrides: { step_mode: true } })).status).toBe(200);
    expect((await ws.next('debugger.pause')).extra.pending_tools).toEqual(['shout']);
    expect(await ws.next('debugger.resume')).toMatchObject({ reason: 'timeout' });
    expect((await ws.next('tool.result')).error).toContain('denied by operator');
    await post(cli.base, '/debug/step/disable', { conv_id: 'cli-1' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
  });

  it('should run the tools file for real and exit 0 on SIGINT', async () => {
    const cli = await start(['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--tools', toolsFile]);
    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=cli-2`);
    await post(cli.base, '/chat', { prompt: 'x', conv_id: 'cli-2' });
    expect(await ws.next('tool.result')).toMatchObject({ result: 'HI' });
    await ws.next('run.end');
    expect(await cli.stop('SIGINT')).toBe(0);
    expect(await ws.waitClose()).toBe(1001);
  });

  it('should cancel runs, close sockets and exit 0 on SIGTERM', async () => {
    const cli = await start(['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--tools', toolsFile], { STEPWISE_DEBUG: '1' });
    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=cli-3`);
    await post(cli.base, '/chat', { prompt: 'x', conv_id: 'cli-3', overrides: { step_mode: true } });
    await ws.next('debugger.pause');
    expect(await cli.stop('SIGTERM')).toBe(0);
    expect(await ws.waitClose()).toBe(1001);
    expect(ws.frames.find((frame) => frame.type === 'run.end')).toMatchObject({ status: 'cancelled' });
  });

  it('should pick the scripted demo under auto without keys, say so, and run it', async () => {
    const cli = await start(['--port', '0']);
    expect(cli.stdout()).toMatch(/scripted/);
    expect((await get(cli.base, '/debug/pauses')).status).toBe(404);
    const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=demo`);
    await post(cli.base, '/chat', { prompt: 'weather?', conv_id: 'demo' });
    expect(await ws.next('tool.start')).toMatchObject({ name: 'get_weather' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
  });

  it('should require tokens from STEPWISE_AUTH_TOKENS and --auth-tokens FILE', async () => {
    const cli = await start(['--port', '0', '--auth-tokens', tokensFile], { STEPWISE_AUTH_TOKENS: 'bob:env-token' });
    expect((await get(cli.base, '/conversations')).status).toBe(401);
    expect((await get(cli.base, '/conversations', 'env-token')).status).toBe(200);
    expect((await get(cli.base, '/conversations', 'file-token')).status).toBe(200);
    expect((await get(cli.base, '/healthz')).status).toBe(200);
  });

  it('should refuse a non-loopback host without tokens, and bad flags, with exit 1', () => {
    const open = runCli(['serve', '--port', '0', '--host', '0.0.0.0']);
    expect(open.status).toBe(1);
    expect(open.output).toMatch(/refusing to listen on 0\.0\.0\.0/);
    expect(runCli(['serve', '--port', 'abc']).status).toBe(1);
    expect(runCli(['serve', '--engine', 'nope']).output).toMatch(/--engine/);
    expect(runCli(['serve', '--bogus']).status).toBe(1);
    expect(runCli(['frobnicate']).status).toBe(1);
  });

  it.each(['--help', '-h', 'serve --help', 'serve -h', 'serve --port 0 --help'])(
    'should print every flag with its default, and the environment, for "stepwise %s", and exit 0',
    (line) => {
      const help = runCli(line.split(' '));
      expect(help.status).toBe(0);
      for (const name of ENVIRONMENT) expect(help.output).toContain(`  ${name} `);
      const entries = flagEntries(help.output);
      for (const flag of SERVE_FLAGS) {
        // Every flag says what it does and what it is when not given.
        expect(entries.get(flag), flag).toMatch(/ \w+.{20,}\. Default: .+\.$/);
        if (DEFAULTS[flag]) expect(entries.get(flag)).toContain(`Default: ${DEFAULTS[flag]}.`);
      }
    },
  );

  it('should print the package version with --version', () => {
    const version = runCli(['--version']);
    expect(version.status).toBe(0);
    expect(version.output.trim()).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  });

  it('should refuse an unknown flag or command with exit 1, pointing to --help', () => {
    for (const args of [['serve', '--bogus'], ['--bogus'], ['frobnicate'], ['serve', 'extra'], ['serve', '--port']]) {
      const refused = runCli(args);
      expect(refused.status, args.join(' ')).toBe(1);
      expect(refused.output, args.join(' ')).toMatch(/--help/);
    }
    expect(runCli(['serve', '--bogus']).output).toContain('unknown option "--bogus"');
  });

  it.each([
    ['not JSON', '{profiles:', /not valid JSON/],
    ['a bad field', JSON.stringify({ profiles: { a: { max_iterations: 0 } } }), /profiles\.a\.max_iterations/],
    ['an unknown engine', JSON.stringify({ profiles: { a: { engine: 'gpt' } } }), /profiles\.a\.engine/],
    ['an unknown field', JSON.stringify({ profiles: { a: { temperature: 1 } } }), /profiles\.a.*temperature/],
    ['a bad slug', JSON.stringify({ profiles: { 'a b': {} } }), /slug/],
    ['an unknown tool', JSON.stringify({ profiles: { a: { tools: ['shout', 'nope'] } } }), /profiles\.a\.tools\.1: unknown tool "nope"/],
    ['an engine without its key', JSON.stringify({ profiles: { a: { engine: 'anthropic' } } }), /profile a: .*ANTHROPIC_API_KEY/],
    ['no profiles object', JSON.stringify({ research: {} }), /profiles/],
  ])('should refuse a profiles file with %s: exit 1 naming the file and the field', (_what, text, message) => {
    const file = join(dir, `bad-profiles-${_what.replace(/\W+/g, '-')}.json`);
    writeFileSync(file, text);
    const refused = runCli(['serve', '--port', '0', '--engine', 'scripted', '--tools', toolsFile, '--profiles', file]);
    expect(refused.status).toBe(1);
    expect(refused.output).toContain(`--profiles ${file}`);
    expect(refused.output).toMatch(message);
  });

  it('should refuse a missing profiles file with exit 1', () => {
    const refused = runCli(['serve', '--port', '0', '--profiles', join(dir, 'missing.json')]);
    expect(refused.status).toBe(1);
    expect(refused.output).toMatch(/--profiles .*missing\.json: cannot read it \(ENOENT\)/);
  });

  it('should load a good profiles file, build the profile engines it names, and serve', async () => {
    const cli = await start(['--port', '0', '--engine', 'scripted', '--script', scriptFile, '--tools', toolsFile, '--profiles', profilesFile]);
    expect(cli.stdout()).toContain('profile quiet: engine scripted');
    expect(cli.stdout()).toContain(`profiles: shouter, quiet from ${profilesFile}`);
    expect((await get(cli.base, '/healthz')).status).toBe(200);
    const listed = await get(cli.base, '/profiles');
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({
      profiles: [
        { slug: 'shouter', description: 'Shouts.', tools: ['shout'] },
        { slug: 'quiet', description: 'Its own scripted engine.' },
      ],
    });
  });

  describe('with a real engine (OpenAI over a local replay server)', () => {
    let provider: ReplayServer;
    beforeAll(async () => {
      provider = await startReplayServer();
    });
    afterAll(() => provider.close());

    const toolsAdvertised = async (args: string[]): Promise<string[]> => {
      provider.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
      const seen = provider.requests.length;
      const cli = await start(['--port', '0', '--engine', 'openai', '--base-url', provider.url('/v1'), ...args]);
      const ws = await SemClient.connect(`${cli.wsBase}/ws?conv_id=real`);
      await post(cli.base, '/chat', { prompt: 'hello', conv_id: 'real' });
      expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
      await ws.close();
      const request = await provider.request(seen);
      return ((request.body.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);
    };

    it('should not offer the demo tools to a real model unless --demo-tools asks', async () => {
      expect(await toolsAdvertised([])).toEqual([]);
      expect(await toolsAdvertised(['--demo-tools'])).toEqual(['get_weather', 'calculator', 'search']);
      expect(await toolsAdvertised(['--tools', toolsFile])).toEqual(['shout']);
    });
  });
});
