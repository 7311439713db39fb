import type { AddressInfo } from 'node:net';
import { config as rxjsConfig } from 'rxjs';
import type { Store } from '../core/store.js';
import { createServer, type ServerOptions, type StepwiseHttpServer as StepwiseServer } from '../server/app.js';
import { profileChoices, type Profile } from '../server/profiles.js';
import { announceToRuns } from '../sessions/announce.js';
import { exportTracesFromEnv } from '../telemetry/otlp-export.js';
import type { Env, ServeOptions } from './options.js';
import { loadServeInputs, toolSourcesOf, type ServeInputs } from './serve-inputs.js';
import { openServerStore } from './server-store.js';
import { readWebhooksFile } from './webhooks-file.js';

/**
 * `stepwise serve`: reads every file, opens the store, recovers its conversations and listens; runs
 * until SIGINT or SIGTERM. A start that fails closes what it opened and throws.
 */
export async function serve(options: ServeOptions, env: Env): Promise<void> {
  const inputs = await loadServeInputs(options, env);
  const webhooks = options.webhooks === undefined ? undefined : await readWebhooksFile(options.webhooks);
  const debug = options.debug || env['STEPWISE_DEBUG'] === '1' || env['STEPWISE_DEBUG'] === 'true';
  // Opened last, once every file has been read: a refused start holds no lock. A locked or unreadable
  // store throws here with a message naming the dir (and the holder's pid); bin/stepwise.js exits 1 with it.
  const store = openServerStore(options, env);
  // Registered before the runtime starts, so its first run is traced.
  const traces = await exportTracesFromEnv(env);
  if (traces) console.log(`traces: exported over OTLP to ${traces.endpoint}`);
  const stopEdges = async (): Promise<void> => {
    await inputs.mcp?.close();
    await traces?.shutdown();
  };
  const server = createServer({
    ...serverOptionsOf(options, inputs, store, debug),
    ...(webhooks ? { webhooks, onWebhookFailure: (line: string) => console.log(line), webhookMaxAttempts: options.webhookMaxAttempts } : {}),
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
  });
  // A server that dies while serving: the runs in progress hear of it (stderr already has).
  inputs.mcp?.down$.subscribe(({ server: name, tools: withdrawn, message }) => announceToRuns(server.stepwise, { level: 'warn', message, fields: { mcp_server: name, withdrawn } }));
  try {
    await recoverAndListen(server, options, inputs.profiles);
  } catch (error) {
    await server.close();
    await store.close();
    await stopEdges();
    throw error;
  }
  announceListening(server, options, inputs.tokens, debug);
  stopOnSignals(async () => {
    // A durable store keeps the runs for the next start (docs/protocol.md, Durability); memory has nowhere to keep them.
    if (store.durable) await server.stepwise.suspend();
    await server.close();
    await store.close();
    // Last: the spans of the runs stopped above are flushed, and MCP server processes end.
    await stopEdges();
  });
  keepServingOnStrayErrors();
}

/** The server the flags and files describe, its runtime writing to `store`. */
function serverOptionsOf(options: ServeOptions, inputs: ServeInputs, store: Store, debug: boolean): ServerOptions {
  const { engine, tools, tokens, profiles, mcp } = inputs;
  return {
    runtime: {
      engine,
      tools,
      pauseTimeoutMs: options.pauseTimeoutMs,
      timeoutAction: options.pauseTimeoutAction,
      maxIterations: options.maxIterations,
      toolTimeoutMs: options.toolTimeoutMs,
      maxParallelTools: options.maxParallelTools,
      maxAgentDepth: options.maxAgentDepth,
      ...(options.hibernateAfterMs === undefined ? {} : { hibernateAfterMs: options.hibernateAfterMs }),
      store,
    },
    // The audit trail route reads the same store the runtime writes.
    store,
    debug,
    tokens,
    allowedOrigins: options.allowedOrigins,
    allowedHosts: options.allowedHosts,
    ...(profiles.length > 0 ? { profiles } : {}),
    toolSources: toolSourcesOf(options.tools ? inputs.ownTools : [], mcp?.servers ?? []),
    onError: (error) => console.error('stepwise: unexpected error:', error),
  };
}

/** Brings back the store's conversations (each with its profile's choices), then listens. */
async function recoverAndListen(server: StepwiseServer, options: ServeOptions, profiles: readonly Profile[]): Promise<void> {
  const bySlug = new Map(profiles.map((profile) => [profile.slug, profile]));
  const recovered = await server.stepwise.recover({
    choicesFor: (slug) => {
      const profile = bySlug.get(slug);
      return profile && profileChoices(profile);
    },
  });
  if (recovered.conversations > 0) {
    console.log(`store: ${recovered.conversations} conversation(s) restored, ${recovered.runs} run(s) resumed (${recovered.pauses} paused)`);
  }
  // Each ended failed and stored as ended (docs/protocol.md, Durability): the next start does not try it again.
  for (const failed of recovered.failed ?? []) console.log(`store: the run ${failed.inference_id} of ${failed.conv_id} could not be restored and ended failed: ${failed.error}`);
  await new Promise<void>((done, fail) => {
    server.http.once('error', fail);
    server.http.listen(options.port, options.host, () => {
      server.http.off('error', fail);
      // A listening server's own errors (out of file descriptors under a connection flood) are logged, never fatal.
      server.http.on('error', (error) => console.error('stepwise: server error:', error));
      done();
    });
  });
}

/** The ready line (which tests and scripts wait for) and what is on. */
function announceListening(server: StepwiseServer, options: ServeOptions, tokens: ReadonlyMap<string, string>, debug: boolean): void {
  const { port } = server.http.address() as AddressInfo;
  const host = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  if (debug) console.log('debug mode: /debug/* routes and step mode are on');
  if (tokens.size > 0) console.log(`auth: ${tokens.size} token(s) configured`);
  if (options.webhooks) console.log(`webhooks: pause events are sent as --webhooks ${options.webhooks} lists`);
  console.log(`stepwise listening on http://${host}:${port}`);
}

/**
 * A bug in a subscriber (RxJS rethrows it on a timer) or a forgotten promise must not take every
 * conversation down: log it loudly and keep serving. Only the CLI, whose process this is, does this.
 */
function keepServingOnStrayErrors(): void {
  rxjsConfig.onUnhandledError = (error: unknown) => console.error('stepwise: unhandled error in a stream:', error);
  process.on('unhandledRejection', (reason) => console.error('stepwise: unhandled promise rejection:', reason));
}

/** Closes once on SIGINT or SIGTERM, then exits 0. */
function stopOnSignals(close: () => Promise<void>): void {
  const stop = (): void => {
    // A second signal, or a close that hangs, still ends the process.
    setTimeout(() => process.exit(0), 5000).unref();
    void close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

