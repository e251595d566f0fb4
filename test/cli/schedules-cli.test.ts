/**
 * `switchboard schedules add|list|remove` (docs/schedules.md): the config file edited (its comments kept), the running
 * gateway reloaded so a schedule fires at once and a removed one shows no more, and the list read from the file when
 * no gateway runs.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BIN,
  type CliResult,
  cliWith,
  ROOT,
  startGatewayProcess,
  stopGatewayProcess,
  tempConfig,
  type GatewayProcess,
} from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  // the ops agent
  agents: { list: [{ id: "ops", model: "scripted/ops" }] },
  models: { providers: { scripted: { type: "scripted", models: { ops: { rules: [{ reply: "done" }] } } } } },
}`);
const cli = cliWith(configPath);

/** The CLI with a token the gateway does not know. */
async function cliWithWrongToken(...args: string[]): Promise<CliResult> {
  try {
    const env = { ...process.env, SWITCHBOARD_TOKEN: 'not-the-token', SWITCHBOARD_URL: '' };
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, '--config', configPath, ...args], { cwd: ROOT, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as CliResult;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
let gateway: GatewayProcess | undefined;
afterAll(async () => {
  if (gateway) await stopGatewayProcess(gateway);
});

interface Listed {
  from: string;
  schedules: { id: string; sessionKey: string; lastFiredSlotAt: string | null; lastInputId: string | null; nextSlotAt: string | null }[];
}

describe('switchboard schedules', () => {
  it('add, list and remove edit the file while no gateway runs, and refuse what the gateway would', async () => {
    expect((await cli('schedules', 'list')).stdout).toBe(
      `(none)\n(no gateway is running: read from ${configPath}; the slots fired are in the store)\n`,
    );
    expect(
      await cli(
        'schedules',
        'add',
        'daily',
        '--cron',
        '0 9 * * 1-5',
        '--timezone',
        'Europe/Berlin',
        '--agent',
        'ops',
        '--message',
        'standup',
      ),
    ).toEqual({
      code: 0,
      stdout: `added schedule "daily" to ${configPath}; no gateway is running; it takes the change when it starts\n`,
      stderr: '',
    });
    const file = readFileSync(configPath, 'utf8');
    expect(file).toContain('// the ops agent');
    expect(file).toContain(
      'schedules: [{ id: "daily", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", agent: "ops", message: "standup" }]',
    );
    const listed = JSON.parse((await cli('--json', 'schedules', 'list')).stdout) as Listed;
    expect(listed.from).toBe('config');
    expect(listed.schedules).toMatchObject([{ id: 'daily', sessionKey: 'agent:ops:main', lastFiredSlotAt: null }]);
    expect(listed.schedules[0].nextSlotAt).toMatch(/^\d{4}-\d\d-\d\dT0[78]:00:00\.000Z$/);
    expect((await cli('schedules', 'list')).stdout).toMatch(
      /\ndaily +cron 0 9 \* \* 1-5 \(Europe\/Berlin\) +agent:ops:main +skip +\S+ +\? +- +standup\n/,
    );

    expect((await cli('schedules', 'add', 'daily', '--every', '1h', '--agent', 'ops', '--message', 'x')).stderr).toBe(
      `switchboard: schedule "daily" already exists in ${configPath}; remove it first ("switchboard schedules remove daily") or pick another id\n`,
    );
    expect((await cli('schedules', 'add', 'bad', '--cron', '61 * * * *', '--agent', 'ops', '--message', 'x')).stderr).toBe(
      `switchboard: invalid config ${configPath}:\n  schedules[1].cron: croner refuses "61 * * * *": CronPattern: Invalid value for minute: 61 (e.g. "0 9 * * 1-5" is 09:00 on weekdays, "*/15 * * * *" every 15 minutes)\n`,
    );
    expect((await cli('schedules', 'add', 'who', '--every', '1h', '--agent', 'nobody', '--message', 'x')).stderr).toBe(
      `switchboard: invalid config ${configPath}:\n  schedules[1].agent: unknown agent "nobody" (agents: ops)\n`,
    );
    expect((await cli('schedules', 'add', 'two', '--every', '1h', '--cron', '* * * * *', '--agent', 'ops', '--message', 'x')).stderr).toBe(
      'switchboard: give either --cron or --every, not both or neither\n',
    );
    expect((await cli('schedules', 'add', 'two', '--every', 'soon', '--agent', 'ops', '--message', 'x')).stderr).toBe(
      `error: option '--every <interval>' argument 'soon' is invalid. expected an interval such as "30s", "15m", "1h30m" or "1d", or milliseconds of at least 1000, got "soon"\n(add --help for usage)\n`,
    );
    expect((await cli('schedules', 'remove', 'nope')).stderr).toBe(`switchboard: no schedule "nope" in ${configPath} (schedules: daily)\n`);
    expect(readFileSync(configPath, 'utf8')).toBe(file);
  });

  it('with a gateway running: add takes effect at once and fires, list shows the fired slot, remove drops it', async () => {
    gateway = await startGatewayProcess(configPath);
    const added = await cli('schedules', 'add', 'tick', '--every', '1s', '--agent', 'ops', '--message', 'tick');
    expect(added.stdout).toBe(`added schedule "tick" to ${configPath}; config reloaded: applied schedules\n`);
    const fired = await waitUntil(
      'the tick schedule fired',
      async () => {
        const listed = JSON.parse((await cli('--json', 'schedules', 'list')).stdout) as Listed;
        const tick = listed.schedules.find((schedule) => schedule.id === 'tick');
        return listed.from === 'gateway' && tick?.lastInputId ? tick : undefined;
      },
      20_000,
      200,
    );
    expect(fired.lastFiredSlotAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);

    // A token the gateway refuses is no gateway down: list does not fall back on the file, add and remove say the file
    // changed but the gateway did not reload it, and each names the command that prints the token.
    const refused = `invalid bearer token from the gateway at ${gateway.url} (print its token with "switchboard --config ${configPath} token", or pass the --config it was started with)`;
    expect(await cliWithWrongToken('schedules', 'list')).toEqual({ code: 1, stdout: '', stderr: `switchboard: ${refused}\n` });
    expect(await cliWithWrongToken('schedules', 'add', 'other', '--every', '1h', '--agent', 'ops', '--message', 'x')).toEqual({
      code: 1,
      stdout: '',
      stderr: `switchboard: added schedule "other" to ${configPath}, but the running gateway did not reload it: ${refused}\n`,
    });
    expect(await cliWithWrongToken('schedules', 'remove', 'other')).toEqual({
      code: 1,
      stdout: '',
      stderr: `switchboard: removed schedule "other" from ${configPath}, but the running gateway did not reload it: ${refused}\n`,
    });
    expect((await cli('schedules', 'remove', 'tick')).stdout).toBe(
      `removed schedule "tick" from ${configPath}; config reloaded: applied schedules\n`,
    );
    const listed = JSON.parse((await cli('--json', 'schedules', 'list')).stdout) as Listed;
    expect(listed.schedules.map((schedule) => schedule.id)).toEqual(['daily']);
  }, 60_000);
});
