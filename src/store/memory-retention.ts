/**
 * A memory store keeps the newest frames of each conversation, like the hub's replay buffer
 * (`createStepwise`'s default store): `serve --store memory` must not grow without bound. Its own
 * module, so the package's `createMemoryStore` (./index.ts) has it without loading every adapter.
 */
export const DEFAULT_MEMORY_FRAMES_PER_CONVERSATION = 1000;
