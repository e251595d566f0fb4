/** The CLI's hints name the config they apply to, so that they are right for a gateway started with any config. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

const { dir, configPath } = tempConfig(`{
  gateway: { port: 9 },
  agents: { list: [{ id: "a", model: "scripted/a" }] },
  models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "ok" }] } } } } },
}`);

async function cli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await promisify(execFile)(process.execPath, [BIN, '--config', configPath, ...args], {
      cwd: ROOT,
      env: { ...process.env, SWITCHBOARD_TOKEN: '', SWITCHBOARD_URL: '', ...env },
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    return error as { code: number; stderr: string };
  }
}

describe('CLI hints', () => {
  it('without a gateway: the start hint names this config, before the first start and after', async () => {
    expect(await cli({}, 'status')).toEqual(
      expect.objectContaining({
        code: 1,
        stderr: `switchboard: no token in ${join(dir, '.switchboard')} yet: start the gateway once ("switchboard --config ${configPath} gateway"), or set SWITCHBOARD_TOKEN\n`,
      }),
    );
    expect(await cli({ SWITCHBOARD_TOKEN: 'a-token-from-the-environment' }, 'status')).toEqual(
      expect.objectContaining({
        code: 1,
        stderr: `switchboard: cannot reach the gateway at http://127.0.0.1:9 (start it with "switchboard --config ${configPath} gateway")\n`,
      }),
    );
  });

  it("with a gateway: a token it refuses is answered with the command that prints this config's token", async () => {
    const gw = await startGatewayProcess(configPath);
    try {
      expect(await cli({ SWITCHBOARD_URL: gw.url, SWITCHBOARD_TOKEN: '' }, 'status')).toEqual(expect.objectContaining({ code: 0 }));
      expect(await cli({ SWITCHBOARD_TOKEN: 'a-stale-token' }, 'status')).toEqual(
        expect.objectContaining({
          code: 1,
          stderr: `switchboard: invalid bearer token from the gateway at ${gw.url} (print its token with "switchboard --config ${configPath} token", or pass the --config it was started with)\n`,
        }),
      );
    } finally {
      await stopGatewayProcess(gw);
    }
  });
});
