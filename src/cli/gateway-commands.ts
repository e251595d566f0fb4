/** `switchboard gateway`, `status` and `token`: the gateway process and what it is doing. */
import { DataDir } from '../gateway/data-dir.js';
import { loadConfigFile } from '../config/load.js';
import { errorMessage } from '../core/errors.js';
import { program, configPath, client, parsePort, print } from './shared.js';

program
  .command('gateway')
  .description('start the gateway in the foreground (Ctrl-C stops it)')
  .option('-p, --port <port>', 'listen on this port instead of gateway.port (0 = any free port)', parsePort)
  .action(async (options: { port?: number }) => {
    // Loaded here so the other commands do not pay for the model SDKs at start-up.
    const { serveGateway } = await import('../app.js');
    const running = await serveGateway({ configPath: configPath(), port: options.port });
    const { gateway } = running;
    const recovered = gateway.lastRecovery;
    print({ url: running.url, gatewayId: gateway.gatewayId, agents: gateway.status().agents, readyMs: running.readyMs, recovered }, () =>
      [
        `Switchboard gateway ${gateway.gatewayId} listening on ${running.url} (ready in ${Math.round(running.readyMs)} ms)`,
        `  agents:   ${gateway.status().agents.join(', ')}`,
        `  data:     ${running.dataDir.path}`,
        `  token:    run "npx switchboard token" to print it`,
        recovered.interruptedRuns.length ? `  recovered ${recovered.interruptedRuns.length} interrupted run(s); requeued ${recovered.requeuedInputs.length} input(s)` : '',
        `Try: npx switchboard chat ${gateway.agents.defaultAgent().config.id}`,
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
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });

program
  .command('status')
  .description('show the running gateway: lanes, active runs, recovery')
  .action(async () => {
    const status = await client().request<ReturnType<import('../gateway/gateway.js').Gateway['status']>>('GET', '/v1/status');
    print(status, () =>
      [
        `gateway ${status.gatewayId}, up ${Math.round(status.uptimeMs / 1000)}s`,
        `agents: ${status.agents.join(', ')}`,
        `lanes: main ${status.lanes.main.active}/${status.lanes.main.max} active, ${status.lanes.main.waiting} waiting; subagent ${status.lanes.subagent.active}/${status.lanes.subagent.max} active, ${status.lanes.subagent.waiting} waiting`,
        `active runs: ${status.activeRuns.length ? status.activeRuns.map((run) => `${run.runId} on ${run.sessionKey}`).join(', ') : 'none'}`,
        `stalled lanes: ${status.stalledLanes.length ? status.stalledLanes.map((stall) => stall.sessionKey).join(', ') : 'none'}`,
        `last recovery: ${status.lastRecovery.interruptedRuns.length} interrupted run(s), ${status.lastRecovery.requeuedInputs.length} requeued, ${status.lastRecovery.droppedInputs.length} dropped input(s)`,
      ].join('\n'),
    );
  });

program
  .command('token')
  .description('print the control API bearer token')
  .action(() => {
    const { dataDir } = loadConfigFile(configPath());
    const token = new DataDir(dataDir).ensure().token();
    print({ token }, () => token);
  });
