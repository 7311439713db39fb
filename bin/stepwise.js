#!/usr/bin/env node
// The `stepwise` command. The TypeScript sources are compiled to dist/ by `npm install` (prepare).
import('../dist/src/cli/main.js')
  .then(({ main }) => main(process.argv.slice(2)))
  .catch((error) => {
    console.error(`stepwise: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
