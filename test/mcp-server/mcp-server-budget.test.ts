/** The MCP caller's own budget (mcpServer.budget): its runs stop at the cap, naming the key, like any budget's. */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningGateway, serveGateway } from '../../src/app.js';
import { tempConfig } from '../helpers/process.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  mcpServer: { caller: "tester", budget: { tokens: 10 } },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
}`);

let gw: RunningGateway;
let client: Client;
beforeAll(async () => {
  gw = await serveGateway({ configPath, port: 0, logLevel: 'silent' });
  client = new Client({ name: 'budget-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { authProvider: { token: async () => gw.token } }));
});
afterAll(async () => {
  await client?.close();
  await gw?.stop();
});

describe('mcpServer.budget', () => {
  it("a run of the caller's session is refused at the caller's cap, and the tool error names mcpServer.budget", async () => {
    // The first call spends past the cap (a call is let through while the cap has room, docs/gates.md); the next is refused.
    const first = await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'spend something' } });
    expect(first.structuredContent).toMatchObject({ status: 'ok' });
    const result = await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'spend more' } });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0].text;
    expect(text).toMatch(
      /^the agent's run ended failed: budget mcp:tester:\d{4}-\d{2}-\d{2} \(mcpServer\.budget\) is used up: \d+ tokens spent and 0 reserved of 10; the model was not called\. Raise mcpServer\.budget in the config/,
    );
    const caps = await gw.gateway.budgetStatus();
    expect(caps.map((cap) => [cap.key.replace(/\d{4}-\d{2}-\d{2}$/, 'DAY'), cap.source, cap.limit])).toEqual([
      ['mcp:tester:DAY', 'mcpServer.budget', { tokens: 10 }],
    ]);
    expect(caps[0].spent.tokens).toBeGreaterThan(10);
  });
});
