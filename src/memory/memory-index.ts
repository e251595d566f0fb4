/**
 * Keeps each agent's memory index current (docs/memory.md): the Markdown files under `<workspace>/memory/`, scanned
 * at start and every `memory.scanIntervalSeconds`, and sooner when a watch sees a change; and, for agents with
 * `memory.transcripts`, their sessions' transcripts. A file is indexed again only when its content changed. A source
 * that yields nothing is reported with the reason, never left silent.
 */
import { constants, watch, type FSWatcher } from 'node:fs';
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { SwitchboardConfig } from '../config/schema.js';
import { errorMessage } from '../core/errors.js';
import { nodeHashing } from '../kit/hashing.js';
import type { Clock, MemoryStore, SessionStore, TranscriptStore } from '../ports/index.js';
import { chunkText } from './chunks.js';

export interface AgentMemoryStatus {
  agentId: string;
  folder: string | null;
  files: number;
  entries: number;
  transcripts: number;
  chunks: number;
  lastScanAt: number | null;
  /** Why a configured source holds nothing, or what went wrong in the last scan. */
  warnings: string[];
}

export interface MemoryIndexDeps {
  config: SwitchboardConfig;
  memory: MemoryStore;
  sessions: SessionStore;
  transcript: TranscriptStore;
  clock: Clock;
  log: (message: string) => void;
}

/** Thrown inside a scan once the index is stopped: the scan ends there, quietly. */
class ScanStopped extends Error {}

export class MemoryIndex {
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly pending = new Map<string, NodeJS.Timeout>();
  private readonly scans = new Map<string, Promise<void>>();
  private stopped = false;
  private readonly lastScan = new Map<string, { at: number; warnings: string[] }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: MemoryIndexDeps) {}

  /** The folder an agent's memory files live in, when it has a workspace. */
  folderOf(agentId: string): string | null {
    const agent = this.deps.config.agents.list.find((candidate) => candidate.id === agentId);
    const workspace = agent?.workspace ?? this.deps.config.agents.defaults.workspace;
    return workspace ? join(workspace, 'memory') : null;
  }

  /** Resolves once the first scan of every agent is done (memory status and searches wait for it). */
  indexed: Promise<void> = Promise.resolve();

  /** Starts the first scan without waiting for it: a gateway with thousands of memory files is ready at once. */
  start(): void {
    if (!this.deps.config.memory.enabled) return;
    this.indexed = this.scanAll();
    this.timer = setInterval(() => void this.scanAll(), this.deps.config.memory.scanIntervalSeconds * 1000);
    this.timer.unref();
  }

  /** Settles once the scans under way have ended; each ends at its next file (or session) once stopped. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const timer of this.pending.values()) clearTimeout(timer);
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    await Promise.allSettled(this.scans.values());
  }

  async scanAll(): Promise<void> {
    await Promise.all(this.deps.config.agents.list.map((agent) => this.scan(agent.id)));
  }

  /** One agent's sources brought up to date; scans of one agent never overlap. */
  scan(agentId: string): Promise<void> {
    const running = this.scans.get(agentId);
    if (running) return running.then(() => this.scan(agentId));
    const scan = this.scanNow(agentId).finally(() => this.scans.delete(agentId));
    this.scans.set(agentId, scan);
    return scan;
  }

  /** Forgets what was indexed from files and scans again from nothing (`switchboard memory reindex`). */
  async reindex(agentId: string): Promise<void> {
    for (const document of await this.deps.memory.documents(agentId)) {
      if (document.source !== 'entry') await this.deps.memory.remove(agentId, document.path);
    }
    await this.scan(agentId);
  }

  async status(): Promise<AgentMemoryStatus[]> {
    await this.indexed;
    const stats = await this.deps.memory.stats();
    return this.deps.config.agents.list.map((agent) => {
      const mine = stats.filter((row) => row.agentId === agent.id);
      const count = (source: string) => mine.find((row) => row.source === source)?.documents ?? 0;
      const last = this.lastScan.get(agent.id);
      return {
        agentId: agent.id,
        folder: this.folderOf(agent.id),
        files: count('file'),
        entries: count('entry'),
        transcripts: count('transcript'),
        chunks: mine.reduce((sum, row) => sum + row.chunks, 0),
        lastScanAt: last?.at ?? null,
        warnings: last?.warnings ?? (this.deps.config.memory.enabled ? ['not scanned yet'] : ['memory is off (memory.enabled: false)']),
      };
    });
  }

  private async scanNow(agentId: string): Promise<void> {
    // A scan queued behind one that was under way at the stop does not start.
    if (this.stopped) return;
    const warnings: string[] = [];
    try {
      await this.scanFiles(agentId, warnings);
      if (this.deps.config.agents.list.find((agent) => agent.id === agentId)?.memory?.transcripts)
        await this.scanTranscripts(agentId, warnings);
    } catch (error) {
      // Stopped part way: what it did is kept, and the next start scans again (a scan of unchanged files is cheap).
      if (error instanceof ScanStopped) return;
      warnings.push(`the scan failed: ${errorMessage(error)}`);
    }
    // Every warning is in `memory status`; the log gets each new one for an agent whose memory is configured (a
    // `memory` section), and a failure for any agent, so that a workspace without a memory folder is not a warning
    // at every start.
    const configured = this.deps.config.agents.list.find((agent) => agent.id === agentId)?.memory !== undefined;
    for (const warning of warnings)
      if ((configured || !warning.startsWith('no memory files')) && !this.lastScan.get(agentId)?.warnings.includes(warning))
        this.deps.log(`memory of agent "${agentId}": ${warning}`);
    this.lastScan.set(agentId, { at: this.deps.clock.now(), warnings });
  }

  private async scanFiles(agentId: string, warnings: string[]): Promise<void> {
    const folder = this.folderOf(agentId);
    const indexed = new Map((await this.deps.memory.documents(agentId, 'file')).map((document) => [document.path, document]));
    const found = new Set<string>();
    if (!folder) {
      const agent = this.deps.config.agents.list.find((candidate) => candidate.id === agentId);
      if (agent?.memory && indexed.size === 0 && (await this.deps.memory.documents(agentId, 'entry')).length === 0)
        warnings.push('no memory files: the agent has no workspace (agents.list[].workspace); only memory_write entries can be indexed');
    } else {
      const root = await realFolder(folder, warnings);
      if (root) {
        this.watch(agentId, root);
        const { files, others } = await markdownUnder(root, warnings);
        if (files.length === 0)
          warnings.push(
            others > 0
              ? `no memory files: ${folder} holds ${others} files, none of them Markdown (.md)`
              : `no memory files: ${folder} is empty; put Markdown (.md) files in it`,
          );
        for (const file of files) {
          this.checkStopped();
          const path = relative(root, file).split('\\').join('/');
          found.add(path);
          await this.indexFile(agentId, path, file, indexed.get(path)?.modifiedAt, warnings);
        }
      }
    }
    for (const path of indexed.keys()) if (!found.has(path)) await this.deps.memory.remove(agentId, path);
  }

  /** Ends a scan under way at its next step once the index is stopped (before it removes what it did not reach). */
  private checkStopped(): void {
    if (this.stopped) throw new ScanStopped();
  }

  private async indexFile(agentId: string, path: string, file: string, indexedAt: number | undefined, warnings: string[]): Promise<void> {
    let handle: Awaited<ReturnType<typeof open>> | undefined;
    try {
      // Opened without following a link (a file swapped for one after the walk), in a folder that is still itself.
      if ((await realpath(dirname(file))) !== dirname(file)) throw linkRefused(path);
      handle = await open(file, READ_FLAGS).catch((error: NodeJS.ErrnoException) => {
        throw error.code === 'ELOOP' ? linkRefused(path) : error;
      });
      const info = await handle.stat();
      if (!info.isFile()) throw new Error(`${path} is not a regular file`);
      const modifiedAt = Math.floor(info.mtimeMs);
      if (indexedAt === modifiedAt) return;
      const max = this.deps.config.memory.maxFileBytes;
      const buffer = Buffer.alloc(Math.min(info.size, max));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      let text = buffer.subarray(0, bytesRead).toString('utf8');
      if (info.size > max) {
        text = text.slice(0, text.lastIndexOf('\n') + 1 || text.length);
        warnings.push(`${path} is ${info.size} bytes; indexed up to memory.maxFileBytes (${max})`);
      }
      const document = { agentId, path, source: 'file' as const, hash: nodeHashing.sha256(text), bytes: info.size, modifiedAt };
      await this.deps.memory.index(document, chunkText(text), this.deps.clock.now());
    } catch (error) {
      warnings.push(error instanceof LinkRefused ? error.message : `${path} could not be indexed: ${errorMessage(error)}`);
    } finally {
      await handle?.close();
    }
  }

  private async scanTranscripts(agentId: string, warnings: string[]): Promise<void> {
    const since = this.lastScan.get(agentId)?.at;
    const sessions = await this.deps.sessions.list({ agentId, ...(since ? { updatedSince: since - 60_000 } : {}), limit: 1000 });
    for (const session of sessions) {
      this.checkStopped();
      const entries = await this.deps.transcript.list(session.key, { limit: 2000 });
      const lines = entries
        .filter((entry) => entry.role === 'user' || entry.role === 'assistant')
        .map((entry) => `${entry.role}: ${textOf(entry.content)}`);
      if (lines.length === 0) continue;
      const text = lines.join('\n');
      const document = {
        agentId,
        path: `sessions/${session.key}`,
        source: 'transcript' as const,
        hash: nodeHashing.sha256(text),
        bytes: text.length,
        modifiedAt: session.updatedAt,
      };
      await this.deps.memory.index(document, chunkText(text), this.deps.clock.now());
    }
    if (!since && sessions.length === 0) warnings.push('memory.transcripts is on, and the agent has no sessions yet');
  }

  /** A change under the folder scans the agent again, a moment later (editors write in several steps). */
  private watch(agentId: string, root: string): void {
    if (this.watchers.has(agentId)) return;
    try {
      const watcher = watch(root, { recursive: true }, () => {
        clearTimeout(this.pending.get(agentId));
        this.pending.set(
          agentId,
          setTimeout(() => void this.scan(agentId), 200),
        );
      });
      watcher.on('error', () => {
        watcher.close();
        this.watchers.delete(agentId);
      });
      this.watchers.set(agentId, watcher);
    } catch {
      // The periodic scan is the backstop.
    }
  }
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** A link met inside a memory folder: skipped, with this as its warning. */
class LinkRefused extends Error {}

function linkRefused(path: string): LinkRefused {
  return new LinkRefused(`${path} is a symbolic link, skipped: memory files and folders are read only as themselves, never through a link`);
}

/**
 * The real path of an agent's memory folder, or undefined with the reason in `warnings`. The folder itself must not
 * be a link: a `memory/` linked to another agent's memory would make that memory this agent's own (the workspace may
 * be reached through a link; the operator names it in the config).
 */
async function realFolder(folder: string, warnings: string[]): Promise<string | undefined> {
  const info = await lstat(folder).catch(() => undefined);
  if (!info) {
    warnings.push(`no memory files: ${folder} does not exist; create it and put Markdown (.md) files in it`);
    return undefined;
  }
  if (info.isSymbolicLink()) {
    const target = await readlink(folder).catch(() => '?');
    warnings.push(
      `${folder} is a symbolic link (to ${target}), refused: memory is read only from a real folder, never through a link, so that no agent takes another's memory as its own; replace the link with a folder (memory.readFrom and memory.shareWith share a memory between agents)`,
    );
    return undefined;
  }
  if (!info.isDirectory()) {
    warnings.push(`no memory files: ${folder} is not a folder; make it a folder of Markdown (.md) files`);
    return undefined;
  }
  const root = await realpath(folder);
  // Checked again on the real path: the folder may have been swapped for a link since the lstat.
  if ((await realpath(dirname(folder))) !== dirname(root)) {
    warnings.push(`${folder} moved while it was read (its real path is ${root}); it is read again at the next scan`);
    return undefined;
  }
  return root;
}

/**
 * Markdown files below `root` (which is a real path), and how many other files there are. A link inside is never
 * followed, wherever it points: each is a warning. A folder is walked only while its real path is still its own.
 */
async function markdownUnder(root: string, warnings: string[]): Promise<{ files: string[]; others: number }> {
  const files: string[] = [];
  const links: string[] = [];
  let others = 0;
  const walk = async (folder: string): Promise<void> => {
    if ((await realpath(folder).catch(() => undefined)) !== folder) {
      links.push(relative(root, folder));
      return;
    }
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name);
      if (entry.isSymbolicLink()) links.push(relative(root, path));
      else if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.endsWith('.md')) files.push(path);
      else others += 1;
    }
  };
  await walk(root);
  for (const link of links.sort()) warnings.push(linkRefused(link.split('\\').join('/')).message);
  return { files: files.sort(), others };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) => (part && typeof part === 'object' && 'text' in part ? String((part as { text: unknown }).text) : ''))
      .filter(Boolean)
      .join(' ');
  return '';
}
