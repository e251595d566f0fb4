/** The quick start's demo config loads and its flows work: a direct answer, and research delegated to a sub-agent. */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway } from '../../src/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

describe('the demo (examples/demo.json5)', () => {
  it('support delegates "research ..." to a sub-agent of expert and passes its result on when it arrives', async () => {
    const { config } = loadConfigFile(join(ROOT, 'examples/demo.json5'));
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-demo' });
    const sent = await gateway.send({ target: 'support', message: 'research cache invalidation', inbound: { channel: 'cli' } });
    const first = await gateway.waitForInput(sent.input.id, 10_000);
    expect(first).toMatchObject({ status: 'completed', reply: `Good question. I've asked a researcher to look into "cache invalidation"; I'll tell you what they find.` });
    const [child] = await gateway.listSubagents('agent:support:main');
    expect(child).toMatchObject({ agentId: 'expert', label: 'research' });
    const reply = await waitUntil('the result was passed on', async () =>
      (await gateway!.journalAfter(0, { sessionKey: 'agent:support:main' })).find((event) => event.type === 'session.reply' && String((event.payload as { text: string }).text).startsWith('Our researcher is done')),
    );
    expect((reply.payload as { text: string }).text).toContain('Technical take on "Research for a customer: cache invalidation"');
  });
});
