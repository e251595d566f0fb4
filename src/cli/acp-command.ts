/**
 * `switchboard acp --agent <id>`: Switchboard as an ACP agent over stdio, for editors (Zed's `agent_servers`,
 * JetBrains, any ACP client; docs/runtimes.md). A thin client of the running gateway's control API: stdout carries
 * only the protocol, and what goes wrong is said on stderr.
 */
import { ndJsonStream } from '@agentclientprotocol/sdk';
import { Readable, Writable } from 'node:stream';
import { SwitchboardError } from '../core/errors.js';
import { AcpEditorServer } from '../runtimes/acp-editor.js';
import { client, program } from './shared.js';

program
  .command('acp')
  .description('serve one agent of the running gateway to an editor over stdio, as an ACP agent')
  .requiredOption('--agent <id>', 'the agent the editor talks to')
  .action(async (options: { agent: string }) => {
    const control = client();
    // Refused here, with a line on stderr, rather than on the editor's first prompt.
    const { agents } = await control.request<{ agents: { id: string }[] }>('GET', '/v1/agents');
    if (!agents.some((agent) => agent.id === options.agent))
      throw new SwitchboardError(
        'AGENT_NOT_FOUND',
        `the gateway has no agent "${options.agent}" (it has: ${agents.map((agent) => agent.id).join(', ')})`,
      );
    const stream = ndJsonStream(
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
      Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    );
    const connection = new AcpEditorServer(control, options.agent).connect(stream);
    await connection.closed;
  });
