/** What a person watching the gateway's terminal sees: the banner, one line per failed run, and the probes. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

// "down" talks to a port nothing listens on: its runs fail with a refused connection.
const { configPath } = tempConfig(`{
  agents: { list: [{ id: "echo", model: "scripted/echo" }, { id: "down", model: "local/m" }, { id: "slow", model: "scripted/slow" }] },
  lanes: { main: { maxConcurrent: 1 }, maxWaiting: 1 },
  a2a: { server: { enabled: true, requireAuth: false } },
  models: { providers: {
    scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] }, slow: { rules: [{ delayMs: 1500, reply: "done" }] } } },
    local: { type: "openai-compatible", baseURL: "http://127.0.0.1:9/v1" },
  } },
}`);

const suite = gatewayForSuite(configPath, { SWITCHBOARD_LOG_LEVEL: 'info', SWITCHBOARD_LOG_FORMAT: 'pretty' });

describe("the gateway's own terminal", () => {
  it('a failed run prints one readable line: the session, the agent, the reason and the command to run next', async () => {
    const sent = await suite.gw.request<{ status: string; runId: string; runStatus: string }>('POST', '/v1/send', {
      target: 'down',
      message: 'hello?',
      wait: true,
    });
    expect(sent.body).toMatchObject({ status: 'ok', runStatus: 'failed' });
    await waitUntil('the failed run is logged', () => suite.gw.stderr().includes('run failed'), 30_000);
    const line = suite.gw
      .stderr()
      .split('\n')
      .find((candidate) => candidate.includes('run failed'))!;
    expect(line).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: run failed: agent down, session agent:down:main: .+ \(switchboard runs show [0-9a-f]{8}\)/,
    );
    expect(line).toContain(`switchboard runs show ${sent.body.runId.slice(0, 8)}`);
    // Not JSON: a person reads it.
    expect(line.trimStart().startsWith('{')).toBe(false);
  });

  it("the README's commands run the clone's CLI directly: never npx, which installs the clone into its cache and builds it again", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const commands = readme.match(/^(?:TOKEN=\$\()?(?:npx |node bin\/)?switchboard\S* .*$/gm) ?? [];
    expect(commands.length).toBeGreaterThan(5);
    for (const command of commands) expect(command).not.toMatch(/^(TOKEN=\$\()?npx switchboard/);
    const quickStart = readme.slice(readme.indexOf('In a second terminal'), readme.indexOf('### The web console'));
    expect(quickStart.match(/^node bin\/switchboard\.js \S+/gm)?.length).toBeGreaterThan(5);
  });

  it('/healthz and /readyz answer without a token and give nothing away', async () => {
    expect(await suite.gw.request('GET', '/healthz', undefined, null)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await suite.gw.request('GET', '/readyz', undefined, null)).toEqual({ status: 200, body: { status: 'ready' } });
    // The rest of the API still wants the token.
    expect((await suite.gw.request('GET', '/v1/status', undefined, null)).status).toBe(401);
  });

  it('the banner says where it listens, where the Agent Cards are, and a CLI command that works from here; --version prints the version', async () => {
    const { configPath: other } =
      tempConfig(`{ agents: { list: [{ id: "echo", model: "scripted/echo" }] }, a2a: { server: { enabled: true, requireAuth: false } },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "hi" }] } } } } } }`);
    const child = spawn(process.execPath, [BIN, '--config', other, 'gateway', '--port', '0'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PATH: '/usr/bin:/bin' },
    });
    let stdout = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    await waitUntil('the banner is printed', () => stdout.includes('Try, in another terminal') || child.exitCode !== null, 15_000);
    expect(stderr).toBe('');
    child.kill('SIGTERM');
    await once(child, 'exit');
    const url = stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)![1];
    expect(stdout).toMatch(
      /^Switchboard \d+\.\d+\.\d+, gateway gw-[0-9a-f-]+, listening on http:\/\/127\.0\.0\.1:\d+ \(ready in \d+ ms\)$/m,
    );
    expect(stdout).toContain(
      `  A2A Agent Cards:\n    echo (default): ${url}/.well-known/agent-card.json\n    echo: ${url}/a2a/echo/.well-known/agent-card.json`,
    );
    // Started from the clone with a config the CLI would not find by itself: the clone's bin (not npx, which would
    // install the clone into its cache and build it again), with --config.
    expect(stdout).toContain(`Try, in another terminal: node bin/switchboard.js --config ${other} chat echo`);
    const version = await cliWith(configPath)('--version');
    expect(version).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/) });
  });

  it('overload: a full lane answers 429 with Retry-After and stores nothing', async () => {
    const send = (peer: string) =>
      fetch(`${suite.gw.url}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${suite.gw.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target: 'slow', message: 'busy?', channel: 'web', peer }),
      });
    expect((await send('one')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await send('two')).status).toBe(200);
    const refused = await send('three');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await refused.json()).error.code).toBe('LANE_QUEUE_FULL');
  });
});
