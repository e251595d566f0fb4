/**
 * No secret of the config leaves the gateway in a text, whole or in part; and only secrets are secrets: a plain value
 * of an MCP server's `env` or `headers` stays readable in logs and errors (docs/configuration.md#secrets).
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { redactor, secretsOf } from '../../src/config/secrets.js';

const config = parseConfigText(
  `{
    agents: { list: [{ id: "a", model: "o/gpt" }] },
    models: { providers: { o: { type: "openai", apiKey: "sk-proj-AbCdEf0123456789wxyz", headers: { "x-api-key": "org-secret-42", "x-org": "acme-engineering" } } } },
    a2a: {
      server: { enabled: true, peers: [{ id: "p", token: "peer-token-0123456789" }] },
      remoteAgents: [{ id: "r", url: "http://r.example", apiKey: "remote-key-abcdefgh" }],
    },
    mcp: { servers: { db: {
      command: "db-mcp",
      env: { MODE: "production", POOL: "process-pool", DB_PASSWORD: "hunter2-but-longer", REGION: "\${DB_REGION}" },
    }, docs: {
      url: "https://docs.example/mcp",
      headers: { Authorization: "Bearer bearer-credential-9876", Accept: "application/json" },
    } } },
    store: { driver: "postgres", url: "postgres://switchboard:pg-pass%21word@db.example:5432/switchboard?sslmode=require" },
    telemetry: { traces: { endpoint: "https://otel.example/v1/traces", headers: { Authorization: "Basic \${LANGFUSE_AUTH}", "x-team": "agents" } } },
  }`,
  '/etc/sb.json5',
  { DB_REGION: 'zq8812-vault-7', LANGFUSE_AUTH: 'cGs6c2stbGYtc2VjcmV0' },
).config;

describe('secrets', () => {
  it("credential fields, env and header values named like a secret or given as ${ENV}, and a URL's password are the secrets", () => {
    expect(secretsOf(config).sort()).toEqual([
      'bearer-credential-9876',
      'cGs6c2stbGYtc2VjcmV0',
      'hunter2-but-longer',
      'org-secret-42',
      'peer-token-0123456789',
      'pg-pass!word',
      'pg-pass%21word',
      'remote-key-abcdefgh',
      'sk-proj-AbCdEf0123456789wxyz',
      'zq8812-vault-7',
    ]);
  });

  it('a text loses each secret, whole or any run of six of its characters, and keeps the rest', () => {
    const redact = redactor(secretsOf(config));
    expect(redact('401: Incorrect API key provided: sk-proj-********************wxyz. You can find your API key at ...')).toBe(
      '401: Incorrect API key provided: [redacted]********************wxyz. You can find your API key at ...',
    );
    expect(redact('auth failed for sk-proj-AbCdEf0123456789wxyz and peer-token-0123456789')).toBe(
      'auth failed for [redacted] and [redacted]',
    );
    expect(redact('the middle: Ef012345 of it')).toBe('the middle: [redacted] of it');
    expect(redact('nothing here: proj- is five, org-secret is one')).toBe('nothing here: proj- is five, [redacted] is one');
    expect(redact('plain text with no key')).toBe('plain text with no key');
    expect(redactor([])('sk-proj-AbCdEf0123456789wxyz')).toBe('sk-proj-AbCdEf0123456789wxyz');
  });

  it('plain env and header values are not secrets: ordinary words stay, the real secrets beside them go', () => {
    const redact = redactor(secretsOf(config));
    expect(redact('the production database is unavailable')).toBe('the production database is unavailable');
    expect(redact('ended 1 process children')).toBe('ended 1 process children');
    expect(redact('PostgreSQL at db.example:5432 refused switchboard over application/json for acme-engineering')).toBe(
      'PostgreSQL at db.example:5432 refused switchboard over application/json for acme-engineering',
    );
    expect(redact('login hunter2-but-longer failed, then hunter2-but in part; Authorization: Bearer bearer-credential-9876')).toBe(
      'login [redacted] failed, then [redacted] in part; Authorization: Bearer [redacted]',
    );
    expect(redact('region zq8812-vault-7, url postgres://switchboard:pg-pass%21word@db.example')).toBe(
      'region [redacted], url postgres://switchboard:[redacted]@db.example',
    );
  });
});

describe('secrets of children', () => {
  it("an ACP agent's and a process runtime's env hold secrets as an MCP server's does: named like one or given as ${ENV}", () => {
    // Children no longer inherit the gateway's environment (docs/runtimes.md): their keys are written in these maps.
    const children = parseConfigText(
      `{
        agents: { list: [{ id: "a", model: "o/gpt" }] },
        models: { providers: { o: { type: "openai" } } },
        acp: { agents: { claude: { command: "claude-acp", env: { ANTHROPIC_API_KEY: "\${ANTHROPIC_API_KEY}", MODE: "production" } } } },
        runtimes: { pi: { command: "pi", env: { OPENAI_API_KEY: "sk-literal-key-5566778899", REGION: "\${PI_REGION}", LEVEL: "verbose" } } },
      }`,
      '/etc/sb.json5',
      { ANTHROPIC_API_KEY: 'sk-ant-from-env-0011223344', PI_REGION: 'vault-region-77' },
    ).config;
    expect(secretsOf(children).sort()).toEqual(['sk-ant-from-env-0011223344', 'sk-literal-key-5566778899', 'vault-region-77']);
    expect(redactor(secretsOf(children))('pi: Incorrect API key provided: sk-ant-from-env-0011223344 in production')).toBe(
      'pi: Incorrect API key provided: [redacted] in production',
    );
  });
});
