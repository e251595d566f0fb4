/** Reading a JSON request body: bounded in size, parsed, and checked against a zod schema with every problem named. */
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { formatPath } from '../config/load.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new SwitchboardError('MESSAGE_TOO_LARGE', `request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SwitchboardError('INVALID_JSON', `request body is not valid JSON: ${errorMessage(error)}`);
  }
}

export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) =>
    issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}` : `${formatPath(issue.path)}: ${issue.message.replace(/^Invalid input: /, '')}`,
  );
  throw new SwitchboardError('INVALID_REQUEST', `invalid request body: ${problems.join('; ')}`, { problems });
}
