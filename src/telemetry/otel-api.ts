import { createRequire } from 'node:module';

const requireApi = createRequire(import.meta.url);

/**
 * `@opentelemetry/api`, loaded when a runtime is created or runs are traced rather than with the package
 * (docs/library.md, A light import). Node resolves both `import` and `require` of it to
 * its one CommonJS build, so this is the same copy an SDK registers itself with: the context keys that
 * parent a span are shared.
 */
export const loadOtelApi = (): typeof import('@opentelemetry/api') => requireApi('@opentelemetry/api') as typeof import('@opentelemetry/api');
