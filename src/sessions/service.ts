import type { Store } from '../core/store.js';
import type { RunOwnership } from '../core/ownership.js';
import type { Stepwise } from './stepwise.js';

/**
 * A store every instance of one service shares (the Redis store, docs/protocol.md, Several
 * instances). A runtime made on it joins the service: its ownership, frames, commands, directory and
 * recovery become the service's, chosen here at wiring time like the store itself, so routes and
 * operators never know whether they run on one instance or many.
 */
export interface ServiceStore extends Store {
  /** Makes `base` one instance of the service. Called once, by `createStepwise`. */
  joinService(base: Stepwise): ServiceInstance;
}

/** A runtime joined to its service, and the ownership port its runs are claimed through. */
export interface ServiceInstance {
  readonly stepwise: Stepwise;
  readonly ownership: RunOwnership;
}

export const isServiceStore = (store: Store): store is ServiceStore => typeof (store as Partial<ServiceStore>).joinService === 'function';
