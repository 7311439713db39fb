#!/usr/bin/env node
// The `stepwise` command. It runs the compiled dist/: shipped in the package, built by `npm install` (prepare)
// in a clone or a git install, and by `npm run build`.
import('../dist/src/cli/main.js')
  .then(({ main }) => main(process.argv.slice(2)))
  .catch((error) => {
    const unbuilt = error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/src/cli/main.js');
    const message = unbuilt
      ? 'dist/ is not built: run "npm run build" (or "npm install") in the stepwise folder'
      : error instanceof Error ? error.message : String(error);
    console.error(`stepwise: ${message}`);
    process.exit(1);
  });
