/**
 * A unified diff of one file's change, for a person approving it (docs/gates.md): the lines before and after that
 * differ, between the lines both share at the start and at the end, with up to three lines of context. One hunk, not
 * a minimal diff: it shows exactly what changes, and costs one pass over the file.
 */
const CONTEXT = 3;
/** Lines of a side shown at most; a longer change says how many were left out. */
const MAX_LINES = 400;

export function unifiedDiff(path: string, before: string | undefined, after: string): string {
  const old = before === undefined ? [] : before.split('\n');
  const next = after.split('\n');
  let head = 0;
  while (head < old.length && head < next.length && old[head] === next[head]) head += 1;
  let tail = 0;
  while (tail < old.length - head && tail < next.length - head && old[old.length - 1 - tail] === next[next.length - 1 - tail]) tail += 1;
  if (head === old.length && head === next.length) return '';
  const from = Math.max(0, head - CONTEXT);
  const oldEnd = Math.min(old.length, old.length - tail + CONTEXT);
  const newEnd = Math.min(next.length, next.length - tail + CONTEXT);
  const lines = [
    `--- ${before === undefined ? '/dev/null' : `a/${path}`}`,
    `+++ b/${path}`,
    `@@ -${from + 1},${oldEnd - from} +${from + 1},${newEnd - from} @@`,
  ];
  const side = (prefix: string, text: string[]) => {
    const shown = text.slice(0, MAX_LINES).map((line) => prefix + line);
    if (text.length > MAX_LINES) shown.push(`${prefix}... ${text.length - MAX_LINES} more lines`);
    return shown;
  };
  lines.push(...old.slice(from, head).map((line) => ` ${line}`));
  lines.push(...side('-', old.slice(head, old.length - tail)));
  lines.push(...side('+', next.slice(head, next.length - tail)));
  lines.push(...old.slice(old.length - tail, oldEnd).map((line) => ` ${line}`));
  return lines.join('\n');
}
