/**
 * A reply split into parts a chat platform takes (Telegram 4096 characters, Discord 2000): at the last paragraph break
 * before the limit, else the last line break, else the last space, else at the limit itself, never inside a surrogate
 * pair. Parts are trimmed of the whitespace they were split at; joined, they hold every other character in order.
 */
export function splitMessage(text: string, maxLength: number): string[] {
  if (maxLength < 2) throw new RangeError(`maxLength must be at least 2, not ${maxLength}`);
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > maxLength) {
    const window = rest.slice(0, maxLength + 1);
    let cut = lastBreak(window, '\n\n') ?? lastBreak(window, '\n') ?? lastBreak(window, ' ');
    if (cut === undefined) {
      cut = maxLength;
      // A high surrogate left last would split a character in two: cut before it.
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    parts.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}

/** Where `window` last breaks at `separator` (the break fits: it ends within the window), if past its first half. */
function lastBreak(window: string, separator: string): number | undefined {
  const at = window.lastIndexOf(separator);
  return at > (window.length - 1) / 2 ? at : undefined;
}
