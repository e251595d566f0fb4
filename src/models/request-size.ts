/**
 * The size of what a model call actually sent: the request body the provider wrote (the AI SDK reports
 * it per step), in UTF-8 bytes, with the system text and the tool definitions counted apart. A model that
 * is not called over HTTP (the scripted one) reports the call options it received as its body.
 */
import { NO_REQUEST } from '../core/request-size.js';
import type { RunRequestSize } from '../ports/index.js';

const bytesOf = (value: unknown) =>
  value === undefined ? 0 : Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value));
const isSystem = (message: unknown) => {
  const role = (message as { role?: unknown } | null)?.role;
  return role === 'system' || role === 'developer';
};

/** One request body's size. It knows the shapes of OpenAI (chat and responses), Anthropic and the scripted model. */
export function measureRequest(body: unknown): RunRequestSize {
  if (body === undefined || body === null) return NO_REQUEST;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return { bytes: bytesOf(body), systemBytes: 0, toolBytes: 0 };
    }
  }
  const fields = (parsed ?? {}) as Record<string, unknown>;
  let systemBytes = bytesOf(fields.system) + bytesOf(fields.instructions);
  for (const list of [fields.messages, fields.input, fields.prompt]) {
    if (Array.isArray(list)) systemBytes += list.filter(isSystem).reduce((sum: number, message) => sum + bytesOf(message), 0);
  }
  return { bytes: bytesOf(body), systemBytes, toolBytes: bytesOf(fields.tools) };
}
