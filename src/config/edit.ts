/**
 * Edits a JSON5 config file as text, so comments and layout outside the edited value survive.
 * A small scanner finds where each value starts and ends; edits splice text at those places.
 */
import { SwitchboardError } from '../core/errors.js';

interface Span {
  start: number;
  end: number;
}

type Node =
  | ({ kind: 'object'; entries: { key: string; start: number; value: Node }[] } & Span)
  | ({ kind: 'array'; items: Node[] } & Span)
  | ({ kind: 'scalar' } & Span);

class Scanner {
  pos = 0;
  constructor(readonly text: string) {}

  skip(): void {
    for (;;) {
      const rest = this.text.slice(this.pos, this.pos + 2);
      if (/^\s/.test(rest)) this.pos += 1;
      else if (rest === '//') this.pos = this.text.indexOf('\n', this.pos) === -1 ? this.text.length : this.text.indexOf('\n', this.pos);
      else if (rest === '/*') this.pos = this.text.indexOf('*/', this.pos + 2) + 2;
      else return;
    }
  }

  fail(what: string): never {
    throw new SwitchboardError('CONFIG_INVALID', `cannot edit the config: ${what} at character ${this.pos}`);
  }

  value(): Node {
    this.skip();
    const start = this.pos;
    const ch = this.text[this.pos];
    if (ch === '{') {
      this.pos += 1;
      const entries: { key: string; start: number; value: Node }[] = [];
      for (;;) {
        this.skip();
        if (this.text[this.pos] === '}') break;
        const keyStart = this.pos;
        const key = this.key();
        this.skip();
        if (this.text[this.pos] !== ':') this.fail('expected ":"');
        this.pos += 1;
        entries.push({ key, start: keyStart, value: this.value() });
        this.skip();
        if (this.text[this.pos] === ',') this.pos += 1;
        else if (this.text[this.pos] !== '}') this.fail('expected "," or "}"');
      }
      this.pos += 1;
      return { kind: 'object', entries, start, end: this.pos };
    }
    if (ch === '[') {
      this.pos += 1;
      const items: Node[] = [];
      for (;;) {
        this.skip();
        if (this.text[this.pos] === ']') break;
        items.push(this.value());
        this.skip();
        if (this.text[this.pos] === ',') this.pos += 1;
        else if (this.text[this.pos] !== ']') this.fail('expected "," or "]"');
      }
      this.pos += 1;
      return { kind: 'array', items, start, end: this.pos };
    }
    if (ch === '"' || ch === "'") {
      this.string();
      return { kind: 'scalar', start, end: this.pos };
    }
    while (this.pos < this.text.length && !/[\s,\]}:/]/.test(this.text[this.pos])) this.pos += 1;
    if (this.pos === start) this.fail('expected a value');
    return { kind: 'scalar', start, end: this.pos };
  }

  key(): string {
    const ch = this.text[this.pos];
    if (ch === '"' || ch === "'") return JSON.parse(`"${this.string().slice(1, -1).replace(/"/g, '\\"')}"`) as string;
    const start = this.pos;
    while (/[A-Za-z0-9_$]/.test(this.text[this.pos] ?? '')) this.pos += 1;
    if (start === this.pos) this.fail('expected a key');
    return this.text.slice(start, this.pos);
  }

  string(): string {
    const quote = this.text[this.pos];
    const start = this.pos;
    this.pos += 1;
    while (this.pos < this.text.length && this.text[this.pos] !== quote) this.pos += this.text[this.pos] === '\\' ? 2 : 1;
    this.pos += 1;
    return this.text.slice(start, this.pos);
  }
}

export class Json5Document {
  constructor(public text: string) {}

  /**
   * Keys that appear twice in one object. JSON5 keeps the last silently, so a config that has, say, two
   * `tools` sections (as seed 002's example does) loses the first; callers report these instead.
   */
  duplicateKeys(): { path: string; line: number; firstLine: number }[] {
    const found: { path: string; line: number; firstLine: number }[] = [];
    const lineOf = (position: number) => this.text.slice(0, position).split('\n').length;
    const walk = (node: Node, path: string) => {
      if (node.kind === 'array') {
        node.items.forEach((item, index) => {
          walk(item, `${path}[${index}]`);
        });
      }
      if (node.kind !== 'object') return;
      const seen = new Map<string, number>();
      for (const entry of node.entries) {
        const at = path ? `${path}.${entry.key}` : entry.key;
        const first = seen.get(entry.key);
        if (first !== undefined) found.push({ path: at, line: lineOf(entry.start), firstLine: lineOf(first) });
        else seen.set(entry.key, entry.start);
        walk(entry.value, at);
      }
    };
    walk(this.root(), '');
    return found;
  }

  private root(): Node {
    const scanner = new Scanner(this.text);
    return scanner.value();
  }

  private find(path: (string | number)[]): Node | undefined {
    let node: Node | undefined = this.root();
    for (const part of path) {
      if (!node) return undefined;
      if (typeof part === 'number') node = node.kind === 'array' ? node.items[part] : undefined;
      else node = node.kind === 'object' ? node.entries.find((entry) => entry.key === part)?.value : undefined;
    }
    return node;
  }

  private indentAt(position: number): string {
    const lineStart = this.text.lastIndexOf('\n', position - 1) + 1;
    return this.text.slice(lineStart, position).match(/^\s*/)?.[0] ?? '';
  }

  /** What goes before a new element that follows one starting at `position`: a new line if it had one. */
  private separatorBefore(position: number): string {
    const lineStart = this.text.lastIndexOf('\n', position - 1) + 1;
    return /^\s*$/.test(this.text.slice(lineStart, position)) ? `\n${this.indentAt(position)}` : ' ';
  }

  private splice(start: number, end: number, insert: string): void {
    this.text = this.text.slice(0, start) + insert + this.text.slice(end);
  }

  /** Inserts `itemText` as the last element of the array at `path`. */
  appendToArray(path: (string | number)[], itemText: string): void {
    const node = this.find(path);
    if (node?.kind !== 'array') throw new SwitchboardError('CONFIG_INVALID', `cannot edit the config: ${path.join('.')} is not an array`);
    const last = node.items.at(-1);
    if (!last) {
      const indent = this.indentAt(node.start);
      this.splice(node.start, node.end, `[\n${indent}  ${itemText},\n${indent}]`);
      return;
    }
    const after = this.text.slice(last.end, node.end - 1);
    const hasComma = /^\s*,/.test(after);
    const insertAt = hasComma ? last.end + after.indexOf(',') + 1 : last.end;
    this.splice(insertAt, insertAt, `${hasComma ? '' : ','}${this.separatorBefore(last.start)}${itemText}${hasComma ? ',' : ''}`);
  }

  /** Removes element `index` of the array at `path`, with its comma. */
  removeFromArray(path: (string | number)[], index: number): void {
    const node = this.find(path);
    if (node?.kind !== 'array' || !node.items[index])
      throw new SwitchboardError('CONFIG_INVALID', `cannot edit the config: no ${path.join('.')}[${index}]`);
    const item = node.items[index];
    const next = node.items[index + 1];
    const lineStart = this.text.lastIndexOf('\n', item.start - 1) + 1;
    const start = /^\s*$/.test(this.text.slice(lineStart, item.start)) ? lineStart : item.start;
    if (next) {
      const nextLineStart = this.text.lastIndexOf('\n', next.start - 1) + 1;
      this.splice(start, /^\s*$/.test(this.text.slice(nextLineStart, next.start)) ? nextLineStart : next.start, '');
    } else {
      const tail = this.text.slice(item.end, node.end - 1);
      const comma = tail.match(/^\s*,/);
      const end = comma ? item.end + comma[0].length : item.end;
      const lineEnd = this.text.indexOf('\n', end);
      this.splice(start, lineEnd !== -1 && /^\s*$/.test(this.text.slice(end, lineEnd)) ? lineEnd + 1 : end, '');
    }
  }

  /** Sets `key` on the object at `path` to `valueText`, replacing the old value or adding the key. */
  setKey(path: (string | number)[], key: string, valueText: string): void {
    const node = this.find(path);
    if (node?.kind !== 'object')
      throw new SwitchboardError('CONFIG_INVALID', `cannot edit the config: ${path.join('.') || '(root)'} is not an object`);
    const existing = node.entries.find((entry) => entry.key === key);
    if (existing) {
      this.splice(existing.value.start, existing.value.end, valueText);
      return;
    }
    const safeKey = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key);
    const last = node.entries.at(-1);
    if (!last) {
      this.splice(node.start + 1, node.end - 1, ` ${safeKey}: ${valueText} `);
      return;
    }
    const after = this.text.slice(last.value.end, node.end - 1);
    const hasComma = /^\s*,/.test(after);
    const insertAt = hasComma ? last.value.end + after.indexOf(',') + 1 : last.value.end;
    this.splice(
      insertAt,
      insertAt,
      `${hasComma ? '' : ','}${this.separatorBefore(last.start)}${safeKey}: ${valueText}${hasComma ? ',' : ''}`,
    );
  }

  has(path: (string | number)[]): boolean {
    return this.find(path) !== undefined;
  }
}

/** A JSON5 literal for a plain value, with unquoted keys where they are identifiers. */
export function toJson5(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(toJson5).join(', ')}]`;
  if (value && typeof value === 'object') {
    const parts = Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .map(([key, item]) => `${/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key)}: ${toJson5(item)}`);
    return `{ ${parts.join(', ')} }`;
  }
  return JSON.stringify(value);
}
