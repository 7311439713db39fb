import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

/**
 * express and ws, loaded when a server is built rather than with the package: `createStepwiseServer`
 * is exported from the main entry, and a program that never serves must not pay for them (docs/library.md,
 * A light import). Both are CommonJS, so they load synchronously, as a static import would.
 */
export const loadExpress = (): typeof import('express') => load('express') as typeof import('express');
export const loadWs = (): typeof import('ws') => load('ws') as typeof import('ws');
/** `@ag-ui/core`, loaded when the AG-UI route is mounted (its schemas and enums are the protocol's own). */
export const loadAgUiCore = (): typeof import('@ag-ui/core') => load('@ag-ui/core') as typeof import('@ag-ui/core');
