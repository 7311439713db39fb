import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // rxjs-marbles' jest adapter uses the global describe/test/expect.
    globals: true,
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
