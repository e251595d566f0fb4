/**
 * Config reload on a running gateway: `agents add` and `config reload`, SIGHUP, keys that need a restart named,
 * and a file with problems changing nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliWith, startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "echo", model: "scripted/a" }] },
  models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "said: {{input}}" }] } } } } },
}`);
const cli = cliWith(configPath);

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGatewayProcess(configPath);
});
afterAll(async () => {
  expect(await stopGatewayProcess(gw)).toBe(0);
});

describe('config reload', () => {
  it('an agent added to the file is refused with the reload hint until "config reload", then answers', async () => {
    const added = await cli('agents', 'add', 'tester', '--model', 'scripted/a');
    expect(added.stdout).toBe(`added agent "tester" to ${configPath}; a running gateway takes it with "switchboard config reload"\n`);
    const before = await cli('send', 'tester', 'hi', '--wait');
    expect(before).toEqual({
      code: 1,
      stdout: '',
      stderr: `switchboard: unknown agent "tester" (configured agents: echo); ${configPath} defines "tester", so the gateway runs an older version of the file: apply it with "switchboard --config ${configPath} config reload"\n`,
    });
    expect(await cli('config', 'reload')).toEqual({ code: 0, stdout: 'config reloaded: applied agents\n', stderr: '' });
    expect((await cli('send', 'tester', 'hi', '--wait')).stdout).toBe('said: hi\n');
    expect(JSON.parse((await cli('--json', 'status')).stdout).agents).toEqual(['echo', 'tester']);
  });

  it('SIGHUP reloads too; keys that need a restart are named and keep their running value', async () => {
    const text = readFileSync(configPath, 'utf8');
    writeFileSync(
      configPath,
      text.replace(
        'agents: { list: [',
        'gateway: { port: 7999, maxMessageChars: 50 }, tools: { deny: ["time_now"] }, agents: { list: [{ id: "third", model: "scripted/a" }, ',
      ),
    );
    gw.child.kill('SIGHUP');
    await waitUntil(
      'the third agent is there',
      async () => (await cli('send', 'third', 'hello', '--wait')).stdout === 'said: hello\n',
      10_000,
      100,
    );
    expect(JSON.parse((await cli('--json', 'config', 'reload')).stdout)).toEqual({
      applied: [],
      restartRequired: ['gateway.port', 'gateway.maxMessageChars'],
    });
    // The listener and the message limit are still those the gateway started with.
    expect((await cli('send', 'echo', 'x'.repeat(60), '--wait')).stdout).toBe(`said: ${'x'.repeat(60)}\n`);
    writeFileSync(configPath, text);
  });

  it('a file with problems changes nothing, and the answer lists every problem', async () => {
    const text = readFileSync(configPath, 'utf8');
    writeFileSync(
      configPath,
      text.replace(
        'agents: { list: [{ id: "echo", model: "scripted/a"',
        'lanes: { maxWaitng: 1 }, agents: { list: [{ id: "echo", modle: "scripted/a"',
      ),
    );
    const refused = await cli('config', 'reload');
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr: [
        `switchboard: invalid config ${configPath}:`,
        '  agents.list[0].modle: unknown key (did you mean "model"?)',
        '  lanes.maxWaitng: unknown key (did you mean "maxWaiting"?)',
        '  agents.list[0].model: required (or set agents.defaults.model), expected "<provider>/<model>", got nothing',
        '',
      ].join('\n'),
    });
    const still = await gw.request<{ reply: string }>('POST', '/v1/send', { target: 'tester', message: 'still', wait: true });
    expect(still.body.reply).toBe('said: still');
    writeFileSync(configPath, text);
  });
});
