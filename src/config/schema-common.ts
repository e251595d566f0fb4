/** Schema pieces every config section uses: an agent id, a positive whole number. */
import { z } from 'zod';
import { AGENT_ID_PATTERN } from '../core/session-key.js';

export const agentId = z.string({ error: 'expected a string of 1-64 characters [a-z0-9_-]' }).regex(AGENT_ID_PATTERN, {
  error: 'expected a string of 1-64 characters [a-z0-9_-]',
});

export const positiveInt = z.number().int().positive();
