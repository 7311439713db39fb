import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Router } from 'express';
import { loadWs } from './server-deps.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { TokenTable } from './auth.js';
import type { StepwiseServerOptions } from './server-options.js';
import { createCommandHandler } from '../sessions/commands/handler.js';
import type { ServerContext } from './context.js';
import { createFrameEncoder } from './frame-encoder.js';
import { createProfileTable } from './profiles.js';
import { buildRouter } from './stepwise-router.js';
import { createWsForwarder } from './ws-forwarder.js';
import { createPausesSocket, type PausesSocket } from './ws-inbox-pauses.js';
import { createUpgradeHandler, refuse } from './ws-upgrade.js';
import { createHostGuard, type HostGuard } from './browser-guards.js';
import { createWebhooks } from './webhooks/webhooks.js';

export type { StepwiseServerOptions } from './server-options.js';

export interface AttachOptions {
  /** The conversation socket's path on the app's server, e.g. `/agent/ws`. Default `/ws`. */
  readonly path?: string;
  /**
   * What to do with an upgrade for another path: leave it to the app's other listeners (default), or
   * refuse it with 404 (a server that has no other WebSocket endpoints).
   */
  readonly others?: 'leave' | 'refuse';
}

/** Stepwise's routes, dashboard and WebSocket, to mount in an application (docs/library.md). */
export interface StepwiseServer {
  /** Every route and the dashboard, relative to where the app mounts it (`app.use('/agent', router)`). */
  readonly router: Router;
  /** Serves the WebSocket endpoint on the app's own server (`ws` `noServer` + `handleUpgrade`). */
  attach(server: Server, options?: AttachOptions): void;
  /** Closes every socket (after what is pending is written) and stops serving. The runtime stays the caller's. Idempotent. */
  close(): Promise<void>;
}

/**
 * The server of a runtime, built from the runtime's ports (commands, directory, frames), so it is
 * the same on one process or on an instance of a service. `stepwise serve` is made of exactly this.
 */
export function createStepwiseServer(stepwise: Stepwise, options: StepwiseServerOptions = {}): StepwiseServer {
  // First: a bad entry throws before anything is subscribed.
  const hosts = createHostGuard(options.tokens ?? new Map(), options.allowedHosts);
  // Subscribed before any client, so it sees every committed frame first and in hub order.
  const encoder = createFrameEncoder(stepwise.frames.events$, stepwise.store);
  const handler = createCommandHandler(stepwise, options.onError ? { onError: options.onError } : {});
  const context: ServerContext = {
    stepwise,
    encoder,
    debug: options.debug ?? false,
    profiles: createProfileTable(options.profiles ?? [], stepwise.registry.names()),
    commands: stepwise.commands(handler),
    directory: stepwise.directory,
  };
  const tokens: TokenTable = options.tokens ?? new Map();
  let attached: { readonly server: Server; readonly path: string } | undefined;
  const webhooks = options.webhooks && createWebhooks(stepwise, options.webhooks, {
    baseUrl: () => options.publicUrl ?? baseUrlOf(attached),
    ...(options.onWebhookFailure ? { onFailure: options.onWebhookFailure } : {}),
    ...(options.webhookMaxAttempts === undefined ? {} : { maxAttempts: options.webhookMaxAttempts }),
  });
  const router = buildRouter(context, tokens, options, webhooks);
  // No permessage-deflate: frames are encoded once for every client (see ws-outbox.ts).
  const wss = new (loadWs().WebSocketServer)({ noServer: true, maxPayload: 64 * 1024, perMessageDeflate: false });
  const limits = {
    ...(options.maxClientBufferBytes === undefined ? {} : { maxBufferedBytes: options.maxClientBufferBytes }),
    ...(options.maxClientMessagesPerSecond === undefined ? {} : { maxMessagesPerSecond: options.maxClientMessagesPerSecond }),
  };
  const forwarder = createWsForwarder(stepwise, encoder, limits);
  const allowedOrigins = options.allowedOrigins ?? [];
  const pausesSocket = createPausesSocket({ context, wss, tokens, allowedOrigins, limits });
  let closing: Promise<void> | undefined;
  return {
    router,
    attach: (server, attach = {}) => {
      const path = attach.path ?? '/ws';
      attached ??= { server, path };
      const upgrade = createUpgradeHandler({ context, wss, forwarder, tokens, allowedOrigins, path, others: attach.others ?? 'leave' });
      server.on('upgrade', routeUpgrades(path, attach, hosts, pausesSocket, upgrade));
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        forwarder.dispose();
        pausesSocket.dispose();
        webhooks?.dispose();
        encoder.dispose();
        const stragglers = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, 1000);
        stragglers.unref();
        wss.close(() => resolve());
      });
      return closing;
    },
  };
}

/**
 * Where an upgrade goes: the inbox socket lives beside the conversation socket (docs/protocol.md, The
 * inbox), and the host check comes before any other, on both sockets, as on the routes (Browsers).
 */
function routeUpgrades(path: string, attach: AttachOptions, hosts: HostGuard, pausesSocket: PausesSocket, upgrade: ReturnType<typeof createUpgradeHandler>): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const pausesPath = `${path.replace(/\/$/, '')}/pauses`;
  return (req, socket, head) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    const refusal = pathname === path || pathname === pausesPath || attach.others === 'refuse' ? hosts.refusalOf(req) : undefined;
    if (refusal) {
      socket.on('error', () => socket.destroy());
      refuse(socket, refusal);
    } else if (pathname === pausesPath) pausesSocket.upgrade(req, socket, head);
    else upgrade(req, socket, head);
  };
}

/** The server's own URL as links name it when no public URL is given: its address and mount path. */
function baseUrlOf(attached: { readonly server: Server; readonly path: string } | undefined): string {
  const address = attached?.server.address();
  if (!attached || !address || typeof address === 'string') return '';
  const host = address.address === '::' || address.address === '0.0.0.0' ? 'localhost' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}${attached.path.replace(/\/?ws\/?$/, '')}`;
}
