/**
 * The secrets a config holds (the values of the fields schema.ts marks secret), and a redactor that takes them
 * out of any text before it reaches a log line, an API answer or a run's error: whole, or any run of 6 or more of
 * their characters (a provider that quotes part of a wrong key, as OpenAI's "Incorrect API key provided" does).
 */
import { type SwitchboardConfig, configSchema, secretSchemas } from './schema.js';
import { type AnySchema, layers, unwrap } from './schema-walk.js';

function collect(schema: AnySchema, value: unknown, found: Set<string>): void {
  if (layers(schema).some((layer) => secretSchemas.has(layer)) && typeof value === 'string') found.add(value);
  if (value === null || typeof value !== 'object') return;
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

/** Takes every secret, and every run of at least 6 of its characters, out of a text. */
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
