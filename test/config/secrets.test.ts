/** No secret of the config leaves the gateway in a text, whole or in part. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { redactor, secretsOf } from '../../src/config/secrets.js';

const config = parseConfigText(
  `{
    agents: { list: [{ id: "a", model: "o/gpt" }] },
    models: { providers: { o: { type: "openai", apiKey: "sk-proj-AbCdEf0123456789wxyz", headers: { "x-org": "org-secret-42" } } } },
    a2a: {
      server: { enabled: true, peers: [{ id: "p", token: "peer-token-0123456789" }] },
      remoteAgents: [{ id: "r", url: "http://r.example", apiKey: "remote-key-abcdefgh" }],
    },
  }`,
  '/etc/sb.json5',
  {},
).config;

describe('secrets', () => {
  it('every field marked secret is found in a config', () => {
    expect(secretsOf(config).sort()).toEqual([
      'org-secret-42',
      'peer-token-0123456789',
      'remote-key-abcdefgh',
      'sk-proj-AbCdEf0123456789wxyz',
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
});
