import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/core/split-message.js';

describe('splitMessage', () => {
  it('leaves a text within the limit whole, and an empty one as no parts', () => {
    expect(splitMessage('hello', 10)).toEqual(['hello']);
    expect(splitMessage('  ', 10)).toEqual([]);
  });

  it('splits at a paragraph break, then a line break, then a space, each part within the limit', () => {
    expect(splitMessage('aaaa bbbb\n\ncccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitMessage('aaaa bbbb\ncccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitMessage('aaaa bbbb cccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
  });

  it('cuts a word longer than the limit at the limit, never inside a surrogate pair', () => {
    expect(splitMessage('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    const parts = splitMessage('abc😀def', 4);
    expect(parts).toEqual(['abc', '😀de', 'f']);
  });

  it('keeps every character of a long reply, in order, in parts no longer than the limit', () => {
    const text = Array.from({ length: 500 }, (_, i) => `word${i}${i % 17 === 0 ? '\n\n' : i % 5 === 0 ? '\n' : ' '}`).join('');
    const parts = splitMessage(text, 4096 / 16);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(256);
    expect(parts.join('').replace(/\s/g, '')).toBe(text.replace(/\s/g, ''));
  });
});
