/**
 * A real MCP server built with the SDK, for tests and benchmarks: `stdio`, or `http <port>` (Streamable HTTP,
 * stateless). Tools: `echo` (read-only), `add`, `bump` (appends a line to $MCP_BUMP_FILE: an effect), `secret`
 * (for policy tests), `pid`, `reveal`, which adds the tool `late` and announces the change (list_changed), and
 * with $MCP_TRACE_TOOL set, `traceparent` (the trace context the call carried), and with $MCP_DIE_TOOL set, `die`, which ends the process in the middle of the call (a death with a call in flight).
 */
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function build(): McpServer {
  const server = new McpServer({ name: 'test-tools', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
  server.registerTool(
    'echo',
    { description: 'Echo the text back. '.repeat(40), inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
    async ({ text: value }) => text(`echo: ${value}`),
  );
  server.registerTool('add', { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) =>
    text(String(a + b)),
  );
  server.registerTool('bump', { description: 'Append a line to the bump file.', inputSchema: {} }, async () => {
    appendFileSync(process.env.MCP_BUMP_FILE ?? '/dev/null', `bump ${process.pid}\n`);
    return text('bumped');
  });
  server.registerTool('pid', { description: 'The server process id.', inputSchema: {}, annotations: { readOnlyHint: true } }, async () =>
    text(String(process.pid)),
  );
  server.registerTool('secret', { description: 'A tool the policy denies.', inputSchema: {} }, async () => text('leaked'));
  server.registerTool('reveal', { description: 'Add the tool late.', inputSchema: {} }, async () => {
    server.registerTool('late', { description: 'Added later.', inputSchema: {} }, async () => text('late answer'));
    return text('revealed');
  });
  // With $MCP_TRACE_TOOL set: the trace context the call carried in params._meta (docs/observability.md).
  if (process.env.MCP_TRACE_TOOL)
    server.registerTool(
      'traceparent',
      { description: 'The call traceparent.', inputSchema: {}, annotations: { readOnlyHint: true } },
      async (_args, extra) => text(String(extra._meta?.traceparent ?? 'none')),
    );
  if (process.env.MCP_DIE_TOOL)
    server.registerTool('die', { description: 'End the server during the call.', inputSchema: {} }, async () => {
      process.exit(3);
    });
  return server;
}

const [mode, port] = process.argv.slice(2);
if (mode === 'http') {
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  });
  http.listen(Number(port), '127.0.0.1', () => {
    const address = http.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
  });
} else {
  process.stderr.write('test MCP server on stdio\n');
  await build().connect(new StdioServerTransport());
}
