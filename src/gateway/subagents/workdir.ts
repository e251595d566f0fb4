/**
 * Where a sub-agent's tools work: its agent's workspace, a folder in it (`cwd`), or its own git worktree
 * of it.
 */
import { realpathSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { SwitchboardError } from '../../core/errors.js';
import type { SubagentRecord } from '../../ports/index.js';
import { isInside } from '../../kit/paths.js';
import { createWorktree } from './worktrees.js';

/** The folder `cwd` names inside the workspace; refused when outside it or not a folder. */
function folderIn(base: string | null, cwd: string, agentId: string): string {
  if (!base)
    throw new SwitchboardError('INVALID_REQUEST', `cwd needs agent "${agentId}" to have a workspace (agents.list[${agentId}].workspace)`);
  const path = resolve(base, cwd);
  if (!isInside(base, path))
    throw new SwitchboardError('INVALID_REQUEST', `cwd "${cwd}" is outside the workspace ${base}; give a folder inside it`);
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    // reported below
  }
  if (!isDir) throw new SwitchboardError('INVALID_REQUEST', `cwd "${cwd}" is not a folder in the workspace ${base}`);
  return path;
}

/**
 * The child's working folder. `cwd` is checked against the workspace itself, before a worktree (a copy
 * of it) is made; a workspace that is a folder inside its repository maps to the same folder there.
 */
export async function prepareWorkdir(options: {
  workspace: string | undefined;
  cwd?: string;
  worktree?: boolean;
  /** Where worktrees are made (`<dataDir>/worktrees`). */
  worktreeRoot?: string;
  subagentId: string;
  agentId: string;
}): Promise<{ workdir: string | null; worktree: SubagentRecord['worktree'] }> {
  const { agentId, subagentId } = options;
  const workspace = options.workspace ? resolve(options.workspace) : null;
  const cwd = options.cwd ? relative(workspace ?? '', folderIn(workspace, options.cwd, agentId)) : '';
  let worktree: SubagentRecord['worktree'] = null;
  let workdir = workspace;
  if (options.worktree) {
    if (!workspace)
      throw new SwitchboardError(
        'WORKTREE_FAILED',
        `worktree: true needs agent "${agentId}" to have a workspace (agents.list[${agentId}].workspace)`,
      );
    if (!options.worktreeRoot) throw new SwitchboardError('WORKTREE_FAILED', 'worktree: true needs a gateway with a data directory');
    worktree = await createWorktree(workspace, join(options.worktreeRoot, subagentId), `switchboard/subagent-${subagentId}`);
    workdir = join(worktree.path, relative(worktree.repo, realpathSync(workspace)));
  }
  return { workdir: workdir && cwd ? join(workdir, cwd) : workdir, worktree };
}
