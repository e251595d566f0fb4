#!/usr/bin/env node
// The layering rules of ARCHITECTURE.md section 3, checked over the import graph of src/ (run by `npm test`):
// no import cycle between folders (a sub-folder is one of its own, and so is a file directly under src/) or between files;
// core/ imports nothing outside itself, node: modules included; no file outside gateway/ imports a gateway/ file but the
// composition root (app.ts), since the fronts go through the door (ports/gateway.ts); and no front names the whole Store
// (ports/store.ts), since each is handed its own store port. Prints each breach with a file that causes it.
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

/**
 * The unit a file belongs to: its folder under src/ (a sub-folder is a unit of its own, so store/ and store/postgres/
 * may not import each other), or the file itself when it sits directly in src/.
 */
const unitOf = (file) => {
  const parts = relative(src, file).split(sep);
  return parts.length > 1 ? parts.slice(0, -1).join('/') : parts[0].replace(/\.ts$/, '');
};

const specifiers = (text) =>
  [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => m[1] ?? m[2],
  );

/** The composition root: the one file outside gateway/ that builds the gateway (and so imports it). */
const COMPOSITION_ROOT = 'app.ts';
/** Folders that may name the whole Store: the store's adapters, the gateway that owns it, the ports that declare it. */
const STORE_HOLDERS = ['store', 'gateway', 'ports'];
const top = (relativePath) => relativePath.split(sep)[0];
const importedNames = (text, spec) =>
  [...text.matchAll(/(?:^|\n)\s*import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)]
    .filter((m) => m[2] === spec)
    .flatMap((m) =>
      m[1].split(',').map((name) =>
        name
          .replace(/^\s*type\s+/, '')
          .split(/\s+as\s+/)[0]
          .trim(),
      ),
    );

const edges = new Map(); // unit -> Map(unit -> example file)
const fileEdges = new Map(); // file -> Map(file -> file)
const problems = [];
for (const file of files) {
  const from = unitOf(file);
  const text = readFileSync(file, 'utf8');
  for (const spec of specifiers(text)) {
    if (from === 'core' && !spec.startsWith('.')) {
      problems.push(`core imports outside itself: ${relative(src, file)} imports "${spec}"`);
      continue;
    }
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
    const to = unitOf(target);
    const fromFile = relative(src, file);
    const toFile = relative(src, target);
    if (!fileEdges.has(fromFile)) fileEdges.set(fromFile, new Map());
    if (toFile !== fromFile) fileEdges.get(fromFile).set(toFile, fromFile);
    if (from === 'core' && to !== 'core') problems.push(`core imports outside itself: ${relative(src, file)} imports "${spec}"`);
    if (top(toFile) === 'gateway' && top(fromFile) !== 'gateway' && fromFile !== COMPOSITION_ROOT)
      problems.push(`${fromFile} imports the gateway's own file "${spec}": go through the door (ports/gateway.ts)`);
    if (
      top(toFile) === 'ports' &&
      !STORE_HOLDERS.includes(top(fromFile)) &&
      fromFile !== COMPOSITION_ROOT &&
      importedNames(text, spec).includes('Store')
    )
      problems.push(`${fromFile} names the whole Store: hand it the store port it uses instead (ports/*.ts)`);
    if (to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    if (!edges.get(from).has(to)) edges.get(from).set(to, relative(src, file));
  }
}

/** Tarjan's strongly connected components of `graph` (node -> Map(node -> example)): each of more than one node is a cycle. */
function cyclesOf(graph) {
  let index = 0;
  const state = new Map();
  const stack = [];
  const cycles = [];
  const connect = (node) => {
    state.set(node, { index, low: index, onStack: true });
    index += 1;
    stack.push(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!state.has(next)) {
        connect(next);
        state.get(node).low = Math.min(state.get(node).low, state.get(next).low);
      } else if (state.get(next).onStack) state.get(node).low = Math.min(state.get(node).low, state.get(next).index);
    }
    if (state.get(node).low === state.get(node).index) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!state.has(node)) connect(node);
  return cycles;
}

const linksWithin = (graph, cycle) => {
  const inside = new Set(cycle);
  return cycle.flatMap((from) =>
    [...(graph.get(from) ?? [])]
      .filter(([to]) => inside.has(to))
      .map(([to, file]) => `    ${from} -> ${to}${file === from ? '' : ` (${file})`}`),
  );
};
for (const cycle of cyclesOf(edges)) problems.push(`import cycle between ${cycle.join(', ')}:\n${linksWithin(edges, cycle).join('\n')}`);
// Files too, type-only imports included: a cycle inside a folder is a knot a reader has to hold all at once.
for (const cycle of cyclesOf(fileEdges))
  problems.push(`import cycle between files ${cycle.join(', ')}:\n${linksWithin(fileEdges, cycle).join('\n')}`);

if (problems.length > 0) {
  process.stderr.write(`layering check failed (ARCHITECTURE.md section 3):\n${problems.map((problem) => `  ${problem}`).join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(
  `layering check: ${files.length} files, ${edges.size} folders, no cycles between folders or files, core imports only itself, only the composition root imports gateway/, no front names the Store\n`,
);
