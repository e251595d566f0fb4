/** The one "is this path inside that folder" check (the workspace tools, a sub-agent's working folder). */
import { isAbsolute, relative, sep } from 'node:path';

/** True when `target` is `root` or below it; a name that only starts with ".." (`..secret`) is inside. */
export function isInside(root: string, target: string): boolean {
  const inside = relative(root, target);
  return inside === '' || (!isAbsolute(inside) && inside !== '..' && !inside.startsWith(`..${sep}`));
}
