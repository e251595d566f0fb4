/** Reading a JSON request body: bounded in size, parsed, and checked against a zod schema with every problem named. */
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { formatPath } from '../config/load.js';

const MAX_BODY_BYTES = 1024 * 1024;

/** How much of a body over the limit is read and thrown away, so that its sender gets the 413 instead of a reset connection. */
const MAX_DRAINED_BYTES = 16 * 1024 * 1024;

/**
 * The request's body, at most MAX_BODY_BYTES. A larger one is refused with MESSAGE_TOO_LARGE once it has been read to
 * its end (and dropped), so that the client, still sending, gets the answer and the connection stays usable; one larger
 * than MAX_DRAINED_BYTES is cut off with its connection.
 */
export async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
    else if (size > MAX_DRAINED_BYTES) break;
  }
  if (size > MAX_BODY_BYTES) throw new SwitchboardError('MESSAGE_TOO_LARGE', `request body is larger than ${MAX_BODY_BYTES} bytes`);
  return Buffer.concat(chunks);
}

export async function readJson(request: IncomingMessage): Promise<unknown> {
  const text = (await readBody(request)).toString('utf8');
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
    issue.code === 'unrecognized_keys'
      ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}`
      : `${formatPath(issue.path)}: ${issue.message.replace(/^Invalid input: /, '')}`,
  );
  throw new SwitchboardError('INVALID_REQUEST', `invalid request body: ${problems.join('; ')}`, { problems });
}
