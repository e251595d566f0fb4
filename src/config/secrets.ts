/**
 * The secrets a config holds, and a redactor that takes them out of any text before it reaches a log line, an API
 * answer or a run's error: whole, or any run of 6 or more of their characters (a provider that quotes part of a wrong
 * key, as OpenAI's "Incorrect API key provided" does).
 *
 * What is a secret (docs/configuration.md#secrets), so that plain words stay readable:
 * - a credential field (schema.ts marks them: an `apiKey`, a `token`): its whole value;
 * - a value in a map of `env` or `headers` (secret-schema.ts's named maps) only when its key is named like a secret
 *   (SECRET_NAME: *KEY*, *TOKEN*, *SECRET*, *PASS*, *AUTH*, *CREDENTIAL*, *COOKIE*, *PRIVATE*), without an auth
 *   scheme such as `Bearer `; or what a `${ENV}` reference gave it, the config's way to write a secret. `MODE:
 *   "production"` is not a secret;
 * - in a URL (`store.url`), the password and the values of query parameters named like a secret, not the rest.
 */
import { type SwitchboardConfig, configSchema, secretSchemas } from './schema.js';
import { type AnySchema, layers, unwrap } from './schema-walk.js';
import { envValuesAt, namedSecretMaps } from './secret-schema.js';

/** A key of `env` or `headers` whose value is a secret even when written out in the config. */
export const SECRET_NAME = /KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|PRIVATE/i;

/** `Bearer <token>` and its kind: the scheme is a plain word; the credential after it is the secret. */
const AUTH_SCHEME = /^(?:Bearer|Basic|Token|Bot|Digest)\s+(?=\S)/i;

/** The parts of a secret value that are secret: a URL's password and secret-named parameters, or the whole value. */
function secretParts(value: string): string[] {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      // Not a URL after all: the whole value is the secret.
    }
    if (url) {
      const parts = url.password ? [url.password, decode(url.password)] : [];
      for (const [name, parameter] of url.searchParams) if (SECRET_NAME.test(name)) parts.push(parameter);
      return parts;
    }
  }
  return [value.replace(AUTH_SCHEME, '')];
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function collect(schema: AnySchema, value: unknown, found: Set<string>): void {
  if (value === null || typeof value !== 'object') {
    if (layers(schema).some((layer) => secretSchemas.has(layer)) && typeof value === 'string')
      for (const part of secretParts(value)) found.add(part);
    return;
  }
  if (layers(schema).some((layer) => namedSecretMaps.has(layer))) {
    for (const [key, inner] of Object.entries(value)) {
      if (typeof inner !== 'string') continue;
      if (SECRET_NAME.test(key)) for (const part of secretParts(inner)) found.add(part);
      for (const given of envValuesAt(value, key)) for (const part of secretParts(given)) found.add(part);
    }
    return;
  }
  const def = unwrap(schema)?.def;
  if (def?.type === 'object')
    for (const [key, inner] of Object.entries(def.shape)) collect(inner, (value as Record<string, unknown>)[key], found);
  if (def?.type === 'record') for (const inner of Object.values(value)) collect(def.valueType, inner, found);
  if (def?.type === 'array' && Array.isArray(value)) for (const inner of value) collect(def.element, inner, found);
  if (def?.type === 'union') for (const option of def.options) collect(option, value, found);
}

/** Every secret value in the config (empty strings and placeholders left out). */
export function secretsOf(config: SwitchboardConfig): string[] {
  const found = new Set<string>();
  collect(configSchema, config, found);
  return [...found].filter((secret) => secret.length >= 4);
}

const SHOWN = '[redacted]';
/** The shortest run of a secret's characters that is taken out of a text. */
const RUN = 6;

/** Takes every secret (secretsOf's), and every run of at least 6 of its characters, out of a text. */
export function redactor(secrets: readonly string[]): (text: string) => string {
  const sorted = [...secrets].sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const secret of sorted) if (out.includes(secret)) out = out.split(secret).join(SHOWN);
    for (const secret of sorted) {
      if (secret.length < RUN) continue;
      // The longest run of the secret found in the text, from each place it could start.
      for (let start = 0; start + RUN <= secret.length; start += 1) {
        let end = start + RUN;
        if (!out.includes(secret.slice(start, end))) continue;
        while (end < secret.length && out.includes(secret.slice(start, end + 1))) end += 1;
        out = out.split(secret.slice(start, end)).join(SHOWN);
      }
    }
    return out.replaceAll(`${SHOWN}${SHOWN}`, SHOWN);
  };
}
