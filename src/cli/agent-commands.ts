/** `switchboard agents`: list and edit agents in the config file. */
import { loadConfigFile } from '../config/load.js';
import { SwitchboardError } from '../core/errors.js';
import { addAgent, bindAgent, deleteAgent, setIdentity, unbindAgent } from './config-edits.js';
import { displayName, table } from './format.js';
import { program, configPath, print } from './shared.js';

const agents = program.command('agents').description('list and edit agents in the config file');
agents
  .command('list')
  .description('agents in the config file')
  .action(() => {
    const { config } = loadConfigFile(configPath(), process.env, { unsetEnv: 'allow' });
    const rows = config.agents.list.map((agent) => ({
      id: agent.id,
      name: displayName(agent),
      model: agent.model ?? config.agents.defaults.model ?? null,
      bindings:
        config.bindings
          .filter((b) => b.agentId === agent.id)
          .map((b) => [b.match.channel, b.match.account, b.match.peer].filter(Boolean).join('/'))
          .join(', ') || null,
    }));
    print({ agents: rows }, () => table(rows, ['id', 'name', 'model', 'bindings']));
  });
const restartNote = 'a running gateway takes it with "switchboard config reload"';
agents
  .command('add <id>')
  .description('add an agent to the config file')
  .option('--name <name>', 'its display name')
  .option('--model <provider/model>', 'its model, e.g. openai/gpt-4o-mini (default: agents.defaults.model)')
  .option('--workspace <dir>', 'its workspace folder, with AGENTS.md and the other prompt files')
  .action((id: string, options: { name?: string; model?: string; workspace?: string }) => {
    addAgent(configPath(), { id, ...options });
    print({ added: id }, () => `added agent "${id}" to ${configPath()}; ${restartNote}`);
  });
agents
  .command('delete <id>')
  .description('remove an agent (and its bindings) from the config file')
  .action((id: string) => {
    deleteAgent(configPath(), id);
    print({ deleted: id }, () => `deleted agent "${id}" from ${configPath()}; ${restartNote}`);
  });
agents
  .command('bind <id>')
  .description('route a channel (optionally one account or peer) to an agent')
  .requiredOption('--channel <channel>', 'the channel, e.g. slack, cli, a2a')
  .option('--account <account>', 'only this account of the channel')
  .option('--peer <peer>', 'only this peer (a user or a group) of the channel')
  .action((id: string, options: { channel: string; account?: string; peer?: string }) => {
    bindAgent(configPath(), id, options);
    print({ bound: id, match: options }, () => `bound channel "${options.channel}" to "${id}"; ${restartNote}`);
  });
agents
  .command('unbind <id>')
  .description("remove an agent's bindings (only one channel's with --channel)")
  .option('--channel <channel>', 'only the bindings of this channel')
  .action((id: string, options: { channel?: string }) => {
    const removed = unbindAgent(configPath(), id, options.channel);
    print({ unbound: id, removed }, () => `removed ${removed} binding(s) of "${id}"${removed ? `; ${restartNote}` : ''}`);
  });
agents
  .command('set-identity <id>')
  .description("set an agent's identity (name, emoji, theme, avatar)")
  .option('--name <name>', 'the name people see')
  .option('--emoji <emoji>', 'an emoji shown with it')
  .option('--theme <theme>', 'a word or two on its manner, given to the model')
  .option('--avatar <avatar>', 'an image path or URL')
  .action((id: string, options: { name?: string; emoji?: string; theme?: string; avatar?: string }) => {
    if (Object.keys(options).length === 0)
      throw new SwitchboardError('INVALID_REQUEST', 'give at least one of --name, --emoji, --theme, --avatar');
    setIdentity(configPath(), id, options);
    print({ updated: id, identity: options }, () => `updated the identity of "${id}"; ${restartNote}`);
  });
