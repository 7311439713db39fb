import { createRequire } from 'node:module';

/**
 * The provider SDKs, loaded when an engine of theirs is created rather than when the package is imported:
 * importing `stepwise` must not cost a program the SDKs it does not use (docs/library.md,
 * A light import). `require` keeps engine creation synchronous, so a missing key still fails where
 * the engine is made. Each engine takes its client and its error classes from the one copy loaded here,
 * so `instanceof` in provider-error.ts sees the classes the client throws.
 */
const requireSdk = createRequire(import.meta.url);

export const loadOpenAI = (): typeof import('openai') => requireSdk('openai') as typeof import('openai');

export const loadAnthropic = (): typeof import('@anthropic-ai/sdk') => requireSdk('@anthropic-ai/sdk') as typeof import('@anthropic-ai/sdk');
