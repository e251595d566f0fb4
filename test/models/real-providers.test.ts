import { SESSION_TOOL_NAMES } from '../../src/core/subagent.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

let server: FakeProviderServer;
let gateway: Gateway;
beforeEach(async () => {
  server = await new FakeProviderServer().start();
});
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  await server.close();
});

function configFor(providerText: string, model: string) {
  return `{
    agents: { list: [{ id: "bot", model: "${model}", identity: { name: "Botty" } }] },
    models: { providers: { ${providerText} } },
  }`;
}

async function ask(message: string) {
  const sent = await gateway.send({ target: 'bot', message });
  return gateway.waitForInput(sent.input.id, 10_000);
}

const providers = [
  {
    name: 'openai',
    provider: (url: string) => `openai: { type: "openai", apiKey: "\${OPENAI_API_KEY}", baseURL: "${url}/v1" }`,
    model: 'openai/gpt-test',
    path: '/v1/chat/completions',
    auth: (headers: Record<string, unknown>) => expect(headers.authorization).toBe('Bearer sk-test-key'),
    systemOf: (body: any) => body.messages[0].content,
    toolsOf: (body: any) => body.tools.map((t: any) => t.function.name),
  },
  {
    name: 'openai-compatible (Ollama, vLLM)',
    provider: (url: string) => `ollama: { type: "openai-compatible", baseURL: "${url}/v1", apiKey: "\${OPENAI_API_KEY}" }`,
    model: 'ollama/llama3.2',
    path: '/v1/chat/completions',
    auth: (headers: Record<string, unknown>) => expect(headers.authorization).toBe('Bearer sk-test-key'),
    systemOf: (body: any) => body.messages[0].content,
    toolsOf: (body: any) => body.tools.map((t: any) => t.function.name),
  },
  {
    name: 'anthropic',
    provider: (url: string) => `anthropic: { type: "anthropic", apiKey: "\${OPENAI_API_KEY}", baseURL: "${url}/v1" }`,
    model: 'anthropic/claude-test',
    path: '/v1/messages',
    auth: (headers: Record<string, unknown>) => expect(headers['x-api-key']).toBe('sk-test-key'),
    systemOf: (body: any) => body.system.map((part: any) => part.text).join(''),
    toolsOf: (body: any) => body.tools.map((t: any) => t.name),
  },
];

describe.each(providers)('real provider over its wire format: $name', (p) => {
  const env = { OPENAI_API_KEY: 'sk-test-key' };

  it('provider: streams a text reply; the request carries the key, the system prompt and the tools', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model), env);
    server.reply({ text: 'Hello from the fake model' });
    const result = await ask('hi there');
    expect(result).toMatchObject({ status: 'completed', reply: 'Hello from the fake model', run: { status: 'succeeded', usage: { inputTokens: 21, outputTokens: 7, modelCalls: 1 } } });
    const [request] = server.requests;
    expect(request.path).toBe(p.path);
    p.auth(request.headers);
    expect(request.body.stream).toBe(true);
    expect(p.systemOf(request.body)).toContain('You are agent "bot" (Botty)');
    expect(p.toolsOf(request.body)).toEqual(['time_now', 'workspace_read', ...SESSION_TOOL_NAMES]);
  });

  it('provider: a tool call runs the tool and its result goes back in the next request', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model), env);
    server.reply({ toolCall: { name: 'time_now', args: {} } }, { text: 'It is late.' });
    const result = await ask('what time is it?');
    expect(result).toMatchObject({ status: 'completed', reply: 'It is late.', run: { usage: { modelCalls: 2 } } });
    expect(server.requests).toHaveLength(2);
    expect(JSON.stringify(server.requests[1].body)).toContain('epochMs');
  });

  it('provider: an HTTP error records the run failed with the provider message; the input stays in the transcript', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model).replace('identity', 'maxSteps: 2, identity'), env);
    server.reply({ status: 400, error: 'model "x" is not loaded' });
    const result = await ask('anyone?');
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expect(result.run).toMatchObject({ status: 'failed', errorCode: 'MODEL_PROVIDER_ERROR' });
    expect(result.run.errorMessage).toBe(`model "x" is not loaded (HTTP 400 from ${server.url}${p.path})`);
    expect((await gateway.history('agent:bot:main'))[0]).toMatchObject({ role: 'user', content: 'anyone?' });
  });

  it('provider: a provider that never answers is cut off by the run timeout and recorded timed_out', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model).replace('identity', 'timeoutSeconds: 1, identity'), env);
    server.reply({ hang: true });
    const result = await ask('hello?');
    expect(result).toMatchObject({ status: 'completed', run: { status: 'timed_out', errorCode: 'TIMED_OUT' } });
  });
});
