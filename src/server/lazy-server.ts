import { createRequire } from 'node:module';
import type { Stepwise } from '../sessions/runtime.js';
import type { StepwiseServer, StepwiseServerOptions } from './stepwise-server.js';

const load = createRequire(import.meta.url);

/**
 * `createStepwiseServer` as the package's main entry exports it: the server's modules (every route, the
 * WebSocket wire, the views) load when a server is built, not with the package (docs/library.md, A light
 * import). They are ES modules without top-level await, which Node's `require` loads synchronously.
 */
export function createStepwiseServer(stepwise: Stepwise, options?: StepwiseServerOptions): StepwiseServer {
  return (load('./stepwise-server.js') as typeof import('./stepwise-server.js')).createStepwiseServer(stepwise, options);
}
