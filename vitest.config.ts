import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // The package's own name, as a user imports it: the code blocks of the docs (test/docs) run against
    // this repository's sources.
    alias: [
      { find: /^stepwise$/, replacement: source('./src/index.ts') },
      { find: /^stepwise\/testing$/, replacement: source('./src/testing/index.ts') },
    ],
  },
  test: {
    // rxjs-marbles' jest adapter uses the global describe/test/expect.
    globals: true,
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
