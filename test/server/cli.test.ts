import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

describe('stepwise serve (the CLI)', () => {
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
});
