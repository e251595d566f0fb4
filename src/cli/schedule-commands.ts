/**
 * `switchboard schedules add|list|remove` (docs/schedules.md): add and remove edit the config file and have the running
 * gateway reload it, so a schedule takes effect at once; list asks the running gateway, or reads the file when none runs.
 */
import { InvalidArgumentError } from 'commander';
import { loadConfigFile } from '../config/load.js';
import { describeReload, type ConfigReload } from '../config/reload.js';
import { intervalMs } from '../config/schema-schedules.js';
import { errorMessage, SwitchboardError } from '../core/errors.js';
import { type ScheduleView, scheduleView } from '../schedules/schedule-view.js';
import { addSchedule, removeSchedule } from './config-edits.js';
import { table } from './format.js';
import { configPath, parseLimit, print, program, requestIfRunning } from './shared.js';

/**
 * Has the running gateway reload the file; where none runs, the file is read at its next start. A gateway that refuses
 * (a wrong token) is reported with the file's change, which is made.
 */
async function reloadRunning(done: string): Promise<{ reloaded: ConfigReload | null; note: string }> {
  let report: ConfigReload | undefined;
  try {
    report = await requestIfRunning<ConfigReload>('POST', '/v1/config/reload');
  } catch (error) {
    const code = SwitchboardError.isInstance(error) ? error.code : 'INTERNAL';
    throw new SwitchboardError(code, `${done}, but the running gateway did not reload it: ${errorMessage(error)}`);
  }
  if (report === undefined) return { reloaded: null, note: 'no gateway is running; it takes the change when it starts' };
  return { reloaded: report, note: describeReload(report) };
}

const schedules = program.command('schedules').description('messages sent to agents on a cron expression or an interval');

function parseEvery(value: string): string | number {
  const every = /^\d+$/.test(value) ? Number(value) : value;
  if (intervalMs(every) === undefined)
    throw new InvalidArgumentError(
      `expected an interval such as "30s", "15m", "1h30m" or "1d", or milliseconds of at least 1000, got "${value}"`,
    );
  return every;
}

function parseMissed(value: string): 'skip' | 'catchup' {
  if (value !== 'skip' && value !== 'catchup') throw new InvalidArgumentError(`expected "skip" or "catchup", got "${value}"`);
  return value;
}

interface AddOptions {
  cron?: string;
  every?: string | number;
  agent?: string;
  session?: string;
  message: string;
  missed?: 'skip' | 'catchup';
  maxCatchUp?: number;
  timezone?: string;
  disabled?: boolean;
}

schedules
  .command('add <id>')
  .description('add a schedule to the config file and have the running gateway take it')
  .option('--cron <expr>', 'a cron expression, e.g. "0 9 * * 1-5" (09:00 on weekdays)')
  .option('--every <interval>', 'an interval, e.g. 15m, 1h30m, 1d (slots on its multiples since the Unix epoch)', parseEvery)
  .option('--agent <id>', 'the agent whose main session gets the message')
  .option('--session <key>', 'a session key that gets the message instead, e.g. agent:ops:main')
  .requiredOption('--message <text>', 'the message sent at each slot')
  .option('--missed <skip|catchup>', 'slots missed while no gateway ran: skip them (default) or catch up', parseMissed)
  .option('--max-catch-up <n>', 'with --missed catchup, at most this many missed slots, the newest (default 10)', parseLimit)
  .option('--timezone <tz>', 'the IANA timezone the cron expression is read in (default UTC)')
  .option('--disabled', 'add it switched off (enabled: false)')
  .action(async (id: string, options: AddOptions) => {
    if ((options.cron === undefined) === (options.every === undefined))
      throw new SwitchboardError('INVALID_REQUEST', 'give either --cron or --every, not both or neither');
    if ((options.agent === undefined) === (options.session === undefined))
      throw new SwitchboardError('INVALID_REQUEST', 'give either --agent or --session, not both or neither');
    const entry = {
      id,
      ...(options.cron !== undefined ? { cron: options.cron } : { every: options.every }),
      ...(options.timezone !== undefined ? { timezone: options.timezone } : {}),
      ...(options.agent !== undefined ? { agent: options.agent } : { session: options.session }),
      message: options.message,
      ...(options.missed ? { missed: options.missed } : {}),
      ...(options.maxCatchUp !== undefined ? { maxCatchUp: options.maxCatchUp } : {}),
      ...(options.disabled ? { enabled: false } : {}),
    };
    addSchedule(configPath(), entry);
    const { reloaded, note } = await reloadRunning(`added schedule "${id}" to ${configPath()}`);
    print({ added: id, reloaded }, () => `added schedule "${id}" to ${configPath()}; ${note}`);
  });

schedules
  .command('list')
  .description("each schedule with its next slot and the slot it fired last (the config file's when no gateway runs)")
  .action(async () => {
    const running = await requestIfRunning<{ schedules: ScheduleView[] }>('GET', '/v1/schedules');
    const from = running ? 'gateway' : 'config';
    const views = running?.schedules ?? fromConfigFile();
    const rows = views.map((view) => ({
      id: view.id,
      when: view.cron !== null ? `cron ${view.cron}${view.timezone ? ` (${view.timezone})` : ''}` : `every ${view.every}`,
      target: view.sessionKey,
      missed: view.missed === 'catchup' ? `catchup (${view.maxCatchUp})` : 'skip',
      next: view.nextSlotAt,
      'last fired': from === 'gateway' ? view.lastFiredSlotAt : '?',
      input: view.lastInputId?.slice(0, 8) ?? null,
      message: view.message,
    }));
    const note = from === 'config' ? `\n(no gateway is running: read from ${configPath()}; the slots fired are in the store)` : '';
    print(
      { from, schedules: views },
      () => `${table(rows, ['id', 'when', 'target', 'missed', 'next', 'last fired', 'input', 'message'])}${note}`,
    );
  });

schedules
  .command('remove <id>')
  .description('remove a schedule from the config file and have the running gateway drop it')
  .action(async (id: string) => {
    removeSchedule(configPath(), id);
    const { reloaded, note } = await reloadRunning(`removed schedule "${id}" from ${configPath()}`);
    print({ removed: id, reloaded }, () => `removed schedule "${id}" from ${configPath()}; ${note}`);
  });

/** The schedules as the config file has them, their next slot computed here; what was fired is the gateway's to say. */
function fromConfigFile(): ScheduleView[] {
  const { config } = loadConfigFile(configPath(), process.env, { unsetEnv: 'allow' });
  const now = Date.now();
  return config.schedules.map((schedule) => scheduleView(schedule, undefined, now));
}
