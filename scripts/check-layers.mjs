#!/usr/bin/env node
// The layering rules of ARCHITECTURE.md section 3, checked over the import graph of src/ (run by `npm test`):
// no import cycle between folders (a file directly under src/ counts as a folder of its own), and core/
// imports nothing outside itself, node: modules included. Prints each breach with a file that causes it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// The tree to check: src/ by default, or the folder given (the tests give a small tree of their own).
const src = resolve(process.argv[2] ?? resolve(dirname(fileURLToPath(import.meta.url)), '../src'));
const files = (function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
})(src);

/** The unit a file belongs to: its top folder under src/, or the file itself when it sits directly in src/. */
const unitOf = (file) => {
  const parts = relative(src, file).split(sep);
  return parts.length > 1 ? parts[0] : parts[0].replace(/\.ts$/, '');
};

const specifiers = (text) =>
  [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => m[1] ?? m[2],
  );

const edges = new Map(); // unit -> Map(unit -> example file)
const problems = [];
for (const file of files) {
  const from = unitOf(file);
  for (const spec of specifiers(readFileSync(file, 'utf8'))) {
    if (from === 'core' && !spec.startsWith('.')) {
      problems.push(`core imports outside itself: ${relative(src, file)} imports "${spec}"`);
      continue;
    }
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
    const to = unitOf(target);
    if (from === 'core' && to !== 'core') problems.push(`core imports outside itself: ${relative(src, file)} imports "${spec}"`);
    if (to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    if (!edges.get(from).has(to)) edges.get(from).set(to, relative(src, file));
  }
}

// Tarjan's strongly connected components: a component of more than one unit is an import cycle.
let index = 0;
const state = new Map();
const stack = [];
const cycles = [];
function connect(unit) {
  state.set(unit, { index, low: index, onStack: true });
  index += 1;
  stack.push(unit);
  for (const next of edges.get(unit)?.keys() ?? []) {
    if (!state.has(next)) {
      connect(next);
      state.get(unit).low = Math.min(state.get(unit).low, state.get(next).low);
    } else if (state.get(next).onStack) state.get(unit).low = Math.min(state.get(unit).low, state.get(next).index);
  }
  if (state.get(unit).low === state.get(unit).index) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      state.get(member).onStack = false;
      component.push(member);
    } while (member !== unit);
    if (component.length > 1) cycles.push(component.sort());
  }
}
for (const unit of edges.keys()) if (!state.has(unit)) connect(unit);
for (const cycle of cycles) {
  const inside = new Set(cycle);
  const links = cycle.flatMap((from) =>
    [...(edges.get(from) ?? [])].filter(([to]) => inside.has(to)).map(([to, file]) => `    ${from} -> ${to} (${file})`),
  );
  problems.push(`import cycle between ${cycle.join(', ')}:\n${links.join('\n')}`);
}

if (problems.length > 0) {
  process.stderr.write(`layering check failed (ARCHITECTURE.md section 3):\n${problems.map((problem) => `  ${problem}`).join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(`layering check: ${files.length} files, ${edges.size} folders, no cycles, core imports only itself\n`);
