/**
 * `switchboard mailbox list|send|tail|rejected` (docs/mailbox.md): the shared directory read and written directly, as
 * any other process on the machine does; the gateway need not run.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, readdirSync, rmSync, watch } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { loadConfigFile } from '../config/load.js';
import { messageFiles } from '../mailbox/ingest.js';
import { isMailboxName, MailboxLayout, mailboxDir, messageFileName, REJECTED, type MailMessage } from '../mailbox/layout.js';
import { checkRecipient, participants, postMessage } from '../mailbox/registry.js';
import { ensureRealDir } from '../mailbox/files.js';
import { ago, table } from './format.js';
import { configPath, print, program } from './shared.js';

const mailbox = program
  .command('mailbox')
  .description('the shared file mailbox (pi-messenger layout): who is there, send, follow an inbox, rejected files')
  .option('--dir <path>', 'the mailbox folder (default: mailbox.dir of the config, else $PI_MESSENGER_DIR, else <dataDir>/mailbox)');

function layout(): MailboxLayout {
  const dir = mailbox.opts<{ dir?: string }>().dir;
  if (dir) return new MailboxLayout(dir);
  const { config, dataDir } = loadConfigFile(configPath());
  return new MailboxLayout(mailboxDir(config, dataDir));
}

function name(value: string): string {
  if (!isMailboxName(value)) throw new InvalidArgumentError(`expected a mailbox name (1-50 characters [A-Za-z0-9_-]), got "${value}"`);
  return value;
}

mailbox
  .command('list')
  .description('everyone in the mailbox: alive or gone, messages waiting in their inbox, reservations, last activity')
  .action(() => {
    const everyone = participants(layout());
    print({ participants: everyone }, () =>
      everyone.length === 0
        ? 'no one in the mailbox yet'
        : table(
            everyone.map((participant) => ({
              name: participant.name,
              status: participant.alive ? 'alive' : participant.registration ? 'gone' : 'inbox only',
              waiting: participant.waiting,
              reservations: (participant.registration?.reservations ?? []).map((reservation) => reservation.pattern).join(' ') || '-',
              active: participant.registration ? ago(Date.parse(participant.registration.activity?.lastActivityAt ?? '')) : '-',
            })),
            ['name', 'status', 'waiting', 'reservations', 'active'],
          ),
    );
  });

mailbox
  .command('send <to> <text...>')
  .description("write a message into <to>'s inbox (whole, by rename); your own inbox is made so that replies can come")
  .option('--from <name>', 'who it is from', name, 'user')
  .option('--reply-to <id>', 'the id of the message this answers')
  .action((to: string, words: string[], options: { from: string; replyTo?: string }) => {
    const where = layout();
    checkRecipient(where, to);
    ensureRealDir(where.inbox(options.from));
    const message: MailMessage = {
      id: randomUUID(),
      from: options.from,
      to,
      text: words.join(' '),
      timestamp: new Date().toISOString(),
      replyTo: options.replyTo ?? null,
    };
    const file = postMessage(
      where,
      message,
      messageFileName(Date.now(), randomBytes(4).readUInt32BE(0).toString(36).padStart(6, '0').slice(-6)),
    );
    print({ message, file }, () => `sent ${message.id} to ${to} (${file})`);
  });

mailbox
  .command('tail <name>')
  .description("print the messages arriving in <name>'s inbox, oldest first, as they come (Ctrl-C to stop)")
  .option('--consume', 'delete each message once printed (as its owner would); default: leave it for its owner')
  .option('--once', 'print what is there now and stop')
  .action(async (who: string, options: { consume?: boolean; once?: boolean }) => {
    const where = layout();
    ensureRealDir(where.inbox(who));
    const seen = new Set<string>();
    const show = () => {
      for (const file of messageFiles(where.inbox(who))) {
        if (seen.has(file)) continue;
        const path = join(where.inbox(who), file);
        let message: MailMessage;
        try {
          message = JSON.parse(readFileSync(path, 'utf8')) as MailMessage;
        } catch {
          continue; // Not whole yet; the next look takes it.
        }
        seen.add(file);
        print(
          message,
          () =>
            `${message.timestamp}  ${message.from} -> ${message.to}${message.replyTo ? ` (re ${message.replyTo})` : ''}: ${message.text}`,
        );
        if (options.consume) rmSync(path, { force: true });
      }
    };
    show();
    if (options.once) return;
    const watcher = watch(where.inbox(who), () => show());
    const timer = setInterval(show, 1000);
    await new Promise<void>((resolve) => process.once('SIGINT', resolve));
    watcher.close();
    clearInterval(timer);
  });

mailbox
  .command('rejected [name]')
  .description('the files the gateway refused, per inbox, each with why')
  .action((who?: string) => {
    const where = layout();
    const names = who ? [who] : participants(where).map((participant) => participant.name);
    const rows = names.flatMap((owner) => {
      const dir = join(where.inbox(owner), REJECTED);
      let files: string[];
      try {
        files = readdirSync(dir).filter((file) => !file.endsWith('.error'));
      } catch {
        return [];
      }
      return files.sort().map((file) => {
        let reason = '(no reason recorded)';
        try {
          reason = readFileSync(join(dir, `${file}.error`), 'utf8').trim();
        } catch {}
        return { inbox: owner, file, reason };
      });
    });
    print({ rejected: rows }, () =>
      rows.length ? rows.map((row) => `${row.inbox}/${row.file}  ${row.reason}`).join('\n') : 'nothing rejected',
    );
  });
