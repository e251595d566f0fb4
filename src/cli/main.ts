#!/usr/bin/env node
/** The `switchboard` command. Every command takes --json; errors print one line and exit non-zero. */
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { program } from './commands.js';
import { globals } from './shared.js';

// A reader that went away (`switchboard events | head -5`) ends the command quietly, as it ends `cat`: nothing is
// left to print to. Any other failure to write is still an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

program.parseAsync(process.argv).catch((error: unknown) => {
  const code = SwitchboardError.isInstance(error) ? error.code : 'ERROR';
  if (globals().json) process.stderr.write(`${JSON.stringify({ error: { code, message: errorMessage(error) } })}\n`);
  else process.stderr.write(`switchboard: ${errorMessage(error)}\n`);
  process.exit(1);
});
