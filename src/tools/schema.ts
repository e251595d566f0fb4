/**
 * Builders for tool argument schemas, each refusing a bad value with words the model can act on
 * ("timeoutSeconds must be a number from 0 to 3600"); the gateway's tool contract does the checking.
 */
import { z } from 'zod';

const expected = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`);

export const text = () => z.string({ error: expected('a string') });

/** A key the model chooses (an idempotency key, a correlation id): stored, so bounded. */
export const key = () =>
  z
    .string({ error: expected('a string of 1 to 200 characters') })
    .min(1, { error: 'must be a string of 1 to 200 characters' })
    .max(200, { error: 'must be a string of 1 to 200 characters' });

export const number = (min: number, max: number) => {
  const range = `a number from ${min} to ${max}`;
  return z
    .number({ error: expected(range) })
    .min(min, { error: `must be ${range}` })
    .max(max, { error: `must be ${range}` });
};

export const textList = (min: number, max: number, what = 'strings') => {
  const list = `a list of ${min} to ${max} ${what}`;
  return z
    .array(z.string({ error: `must be ${list}` }), { error: expected(list) })
    .min(min, { error: `must be ${list}` })
    .max(max, { error: `must be ${list}` });
};

export const choice = <T extends string>(values: readonly [T, ...T[]]) =>
  z.enum(values, { error: expected(`one of ${values.join(', ')}`) });

export const flag = () => z.boolean({ error: expected('true or false') });
