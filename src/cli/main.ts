import { loadModelDefaults, mainHelp, serveHelp } from './help.js';
import { parseServeOptions, UsageError, type Env, type ServeOptions } from './options.js';
import { packageVersion } from './package-info.js';
import { serve } from './serve.js';

/**
 * The `stepwise` command: `serve` runs the server until SIGINT or SIGTERM; `--help` and `--version`
 * print and return. Throws on a usage mistake (the message says where to look) or a bad file.
 */
export async function main(argv: readonly string[], env: Env = process.env): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(mainHelp(await loadModelDefaults()));
    return;
  }
  if (command === '--version' || command === '-v') {
    console.log(packageVersion());
    return;
  }
  if (command !== 'serve') {
    const what = command.startsWith('-') ? `unknown option "${command}"` : `unknown command "${command}"`;
    throw new Error(`${what}; run "stepwise --help" for the commands and flags`);
  }
  let options: ServeOptions | 'help';
  try {
    options = parseServeOptions(rest);
  } catch (error) {
    if (error instanceof UsageError) throw new Error(`${error.message}; run "stepwise serve --help" for every flag`);
    throw error;
  }
  if (options === 'help') {
    console.log(serveHelp(await loadModelDefaults()));
    return;
  }
  await serve(options, env);
}
