/** `switchboard gateway`, `status` and `token`: the gateway process and what it is doing. */
import { describeReload, type ConfigReload } from '../config/reload.js';
import { DataDir } from '../kit/data-dir.js';
import { loadConfigFile } from '../config/load.js';
import { errorMessage } from '../core/errors.js';
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Option } from 'commander';
import { resolveConfigPath } from '../config/load.js';
import { LOG_FORMATS, LOG_LEVELS } from '../logging.js';
import { program, configPath, client, parsePort, print, VERSION } from './shared.js';

/**
 * A CLI command that works from the folder the gateway was started in: `switchboard` when that is on the
 * PATH (npm link, npm install -g .), `node bin/switchboard.js` in the clone (`npx switchboard` there would install
 * the clone into npx's cache and build it again, a minute the first time), `npx switchboard` in a project that
 * has it as a dependency, else the script's own path; with `--config` when the CLI would not find this gateway's
 * config from there by itself.
 */
function cliCommand(config: string): string {
  const script = fileURLToPath(new URL('../../bin/switchboard.js', import.meta.url));
  const same = (path: string) => existsSync(path) && realpathSync(path) === realpathSync(script);
  const onPath = (process.env.PATH ?? '').split(delimiter).some((dir) => dir && same(join(dir, 'switchboard')));
  const inClone = realpathSync(process.cwd()) === realpathSync(join(script, '../..'));
  const asDependency = same(join(process.cwd(), 'node_modules/.bin/switchboard'));
  const base = onPath ? 'switchboard' : inClone ? 'node bin/switchboard.js' : asDependency ? 'npx switchboard' : `node ${script}`;
  if (resolveConfigPath(undefined) === config) return base;
  const shown = relative(process.cwd(), config);
  return `${base} --config ${shown.startsWith('..') || shown === '' ? config : shown}`;
}

program
  .command('gateway')
  .description('start the gateway in the foreground (Ctrl-C stops it)')
  .option('-p, --port <port>', 'listen on this port instead of gateway.port (0 = any free port)', parsePort)
  .option('--store <url>', "the store: a postgres:// URL (default: $SWITCHBOARD_STORE_URL, else the config's store)")
  .addOption(new Option('--log-level <level>', 'log level (default: $SWITCHBOARD_LOG_LEVEL, else info)').choices([...LOG_LEVELS]))
  .addOption(
    new Option(
      '--log-format <format>',
      'pretty lines or JSON (default: $SWITCHBOARD_LOG_FORMAT, else pretty on a terminal, json otherwise)',
    ).choices([...LOG_FORMATS]),
  )
  .action(async (options: { port?: number; logLevel?: string; logFormat?: string; store?: string }) => {
    // Loaded here so the other commands do not pay for the model SDKs at start-up.
    const { serveGateway } = await import('../app.js');
    const config = configPath();
    const running = await serveGateway({
      configPath: config,
      port: options.port,
      logLevel: options.logLevel,
      logFormat: options.logFormat,
      storeUrl: options.store,
      version: VERSION,
    });
    const { gateway } = running;
    const recovered = gateway.lastRecovery;
    const cli = cliCommand(config);
    print(
      {
        url: running.url,
        gatewayId: gateway.gatewayId,
        version: VERSION,
        agents: gateway.status().agents,
        readyMs: running.readyMs,
        recovered,
        a2aCards: running.a2aCards,
        cli,
      },
      () =>
        [
          `Switchboard ${VERSION}, gateway ${gateway.gatewayId}, listening on ${running.url} (ready in ${Math.round(running.readyMs)} ms)`,
          `  agents:   ${gateway.status().agents.join(', ')}`,
          `  data:     ${running.dataDir.path}`,
          `  token:    ${cli} token`,
          gateway.config.console.enabled
            ? `  console:  ${running.url}/ (a login link: ${cli} console)`
            : '  console:  off (console.enabled)',
          ...(running.a2aCards.length
            ? ['  A2A Agent Cards:', ...running.a2aCards.map((card) => `    ${card.agentId}: ${card.url}`)]
            : ['  A2A:      off (a2a.server.enabled)']),
          recovered.interruptedRuns.length
            ? `  recovered ${recovered.interruptedRuns.length} interrupted run(s); requeued ${recovered.requeuedInputs.length} input(s)`
            : '',
          `Try, in another terminal: ${cli} chat ${gateway.agents.defaultAgent().config.id}`,
        ]
          .filter(Boolean)
          .join('\n'),
    );
    const shutdown = (signal: string) => {
      process.stderr.write(`\n${signal}: stopping the gateway...\n`);
      running.stop().then(
        () => process.exit(0),
        (error) => {
          process.stderr.write(`error while stopping: ${errorMessage(error)}\n`);
          process.exit(1);
        },
      );
    };
    // SIGHUP reloads the config file, as daemons do; a file with problems changes nothing and is logged.
    process.on('SIGHUP', () => {
      try {
        running.reloadConfig();
      } catch (error) {
        process.stderr.write(`SIGHUP: the config was not reloaded: ${errorMessage(error)}\n`);
      }
    });
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });

program
  .command('status')
  .description('show the running gateway (lanes, active runs, recovery) and every gateway on its database')
  .action(async () => {
    const status = await client().request<
      import('../ports/gateway.js').GatewayStatus & { gateways: import('../ports/gateway.js').GatewayView[] }
    >('GET', '/v1/status');
    print(status, () =>
      [
        `gateway ${status.gatewayId}, up ${Math.round(status.uptimeMs / 1000)}s`,
        `agents: ${status.agents.join(', ')}`,
        `lanes: ${Object.entries(status.lanes)
          .map(([name, lane]) => `${name} ${lane.active}/${lane.max} active, ${lane.waiting} waiting`)
          .join('; ')}`,
        `active runs: ${status.activeRuns.length ? status.activeRuns.map((run) => `${run.runId} on ${run.sessionKey}`).join(', ') : 'none'}`,
        `stalled lanes: ${status.stalledLanes.length ? status.stalledLanes.map((stall) => stall.sessionKey).join(', ') : 'none'}`,
        `last recovery: ${status.lastRecovery.interruptedRuns.length} interrupted run(s), ${status.lastRecovery.requeuedInputs.length} requeued, ${status.lastRecovery.droppedInputs.length} dropped input(s)`,
        `taken over: ${status.takenOver.runs} run(s)${status.takenOver.lastAt ? `, last at ${new Date(status.takenOver.lastAt).toISOString()}` : ''}`,
        'gateways on this database:',
        ...status.gateways.map(describeGateway),
      ].join('\n'),
    );
  });

function describeGateway(gateway: import('../ports/gateway.js').GatewayView): string {
  const state = gateway.stoppedAt !== null ? 'stopped' : gateway.alive ? 'alive' : 'gone';
  const beat = `heartbeat ${(gateway.heartbeatAgeMs / 1000).toFixed(1)}s ago`;
  const work = `${gateway.sessionsHeld} session(s) held, ${gateway.report.activeRuns} active run(s), journal lag ${gateway.journalLag}`;
  return `  ${gateway.id} ${state} (${beat}): ${work}; pid ${gateway.pid} on ${gateway.host}${gateway.url ? `, ${gateway.url}` : ''}, ${gateway.version}`;
}

program
  .command('token')
  .description('print the control API bearer token')
  .action(() => {
    const { dataDir } = loadConfigFile(configPath(), process.env, { unsetEnv: 'allow' });
    const token = new DataDir(dataDir).ensure().token();
    print({ token }, () => token);
  });

const config = program.command('config').description('the config file and the running gateway');
config
  .command('reload')
  .description('apply the config file to the running gateway: agents, bindings, policy, models (as SIGHUP does)')
  .action(async () => {
    const report = await client().request<ConfigReload>('POST', '/v1/config/reload');
    print(report, () => describeReload(report));
  });

program
  .command('console')
  .description("print a one-time login link to the gateway's web console (valid for 5 minutes, used once)")
  .action(async () => {
    const control = client();
    const link = await control.request<{ path: string; expiresAt: number }>('POST', '/v1/console/links');
    const url = `${control.target.url}${link.path}`;
    print({ url, expiresAt: link.expiresAt }, () => `${url}\n(open it within 5 minutes; it logs one browser in once)`);
  });
