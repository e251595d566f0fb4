/**
 * Memory documents cut into chunks for the index: whole lines, a new chunk at each Markdown heading or once a chunk
 * holds CHUNK_CHARS, each with its line range, so a hit can say where it is and memory_get can read around it.
 */
import type { MemoryChunk } from '../ports/index.js';

const CHUNK_CHARS = 1200;

export function chunkText(text: string): MemoryChunk[] {
  const chunks: MemoryChunk[] = [];
  const lines = text.split('\n');
  let start = 0;
  let size = 0;
  const flush = (end: number) => {
    // The range names the chunk's text, without the blank lines around it.
    let first = start;
    let last = end;
    while (first < last && !lines[first].trim()) first += 1;
    while (last > first && !lines[last - 1].trim()) last -= 1;
    if (last > first) chunks.push({ startLine: first + 1, endLine: last, text: lines.slice(first, last).join('\n') });
    start = end;
    size = 0;
  };
  lines.forEach((line, index) => {
    if (index > start && (/^#{1,6}\s/.test(line) || size + line.length > CHUNK_CHARS)) flush(index);
    size += line.length + 1;
  });
  flush(lines.length);
  return chunks;
}
