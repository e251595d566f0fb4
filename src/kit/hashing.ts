/** node:crypto's hashes, for the core logic that takes them as a port (core/subagent.ts `Hashing`). */
import { createHash, createHmac } from 'node:crypto';
import type { Hashing } from '../core/subagent.js';

export const nodeHashing: Hashing = {
  hmacSha256: (secret, text) => createHmac('sha256', secret).update(text).digest('base64url'),
  sha256: (text) => createHash('sha256').update(text).digest('hex'),
};
