/**
 * Git worktrees for sub-agents (seed 000, "code conflicts"): a child spawned with `worktree: true` works
 * in its own `git worktree` on a new branch, so parallel children never write over each other's files.
 * Archiving removes the worktree; the branch, and every commit on it, stays in the repository.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { SwitchboardError } from '../../core/errors.js';

const run = promisify(execFile);

async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-C', cwd, ...args], { timeout: 60_000 });
  return stdout.trim();
}

function failure(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr?.trim();
  return stderr || (error instanceof Error ? error.message : String(error));
}

export interface Worktree {
  path: string;
  branch: string;
  /** The repository's top folder. */
  repo: string;
}

export async function createWorktree(workspace: string, path: string, branch: string): Promise<Worktree> {
  let repo: string;
  try {
    repo = await git(workspace, ['rev-parse', '--show-toplevel']);
  } catch (error) {
    throw new SwitchboardError(
      'WORKTREE_FAILED',
      `worktree: true needs the agent's workspace (${workspace}) to be in a git repository: ${failure(error)}`,
    );
  }
  try {
    mkdirSync(dirname(path), { recursive: true });
    await git(repo, ['worktree', 'add', '-b', branch, path, 'HEAD']);
  } catch (error) {
    throw new SwitchboardError('WORKTREE_FAILED', `could not create the worktree ${path} (branch ${branch}) of ${repo}: ${failure(error)}`);
  }
  return { path, branch, repo };
}

/** Removes the worktree's folder; its branch is kept. */
export async function removeWorktree(worktree: Worktree): Promise<void> {
  try {
    await git(worktree.repo, ['worktree', 'remove', '--force', worktree.path]);
  } catch (error) {
    const message = failure(error);
    if (!/is not a working tree|No such file/i.test(message)) throw new Error(`could not remove the worktree ${worktree.path}: ${message}`);
  }
}
