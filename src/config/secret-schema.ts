/** Schemas whose values are secrets: no error message shows them (load.ts). */
import { z } from 'zod';

export const secretSchemas = new WeakSet<z.ZodType>();

export const secret = <T extends z.ZodType>(schema: T): T => {
  secretSchemas.add(schema);
  return schema;
};

export const secretString = () => secret(z.string());

/** Header values carry credentials as often as not. */
export const headers = () => z.record(z.string(), secretString()).optional();
