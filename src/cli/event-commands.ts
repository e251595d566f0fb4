/** `switchboard events`: the whole journal, live (docs/control-api.md lists the event types). */
import { cliCommand } from './client.js';
import { followJournal } from './follow.js';
import { describeEvent } from './format.js';
import { client, configPath, globals, parseSeq, program } from './shared.js';

program
  .command('events')
  .description("follow the gateway's journal live: every event of every session (Ctrl-C ends)")
  .option('--type <prefix>', 'only events whose type starts with this (run., subagent., board., a2a.)')
  .option('--session <key>', 'only this session')
  .option('--after <seq>', 'first replay the journal after this sequence number (0 = all of it)', parseSeq)
  .action(async (options: { type?: string; session?: string; after?: number }) => {
    const filters = `${options.type ? ` --type ${options.type}` : ''}${options.session ? ` --session ${options.session}` : ''}`;
    await followJournal(client, {
      query: { type: options.type, sessionKey: options.session },
      after: options.after,
      resume: (after) => cliCommand(`events${filters} --after ${after}`, configPath()),
      onEvent: (record, raw) => {
        const shown = globals().json ? raw : `${describeEvent(record)}${record.sessionKey ? `  [${record.sessionKey}]` : ''}`;
        process.stdout.write(`${shown}\n`);
      },
    });
  });
