/** The problems a config is refused with (CONFIG_INVALID), one per line as the error lists them. */
import { expect } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { SwitchboardError } from '../../src/core/errors.js';

export function configProblems(text: string): string[] {
  try {
    parseConfigText(text, '/etc/sb.json5', {});
  } catch (error) {
    expect(SwitchboardError.isInstance(error) && error.code).toBe('CONFIG_INVALID');
    return (error as Error).message
      .split('\n')
      .slice(1)
      .map((line) => line.trim());
  }
  throw new Error('expected the config to be rejected');
}
