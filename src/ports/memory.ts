/** Agents' memory (docs/memory.md): documents split into chunks, searched by full text. Times are epoch milliseconds. */

export type MemorySource = 'file' | 'entry' | 'transcript';

export interface MemoryChunk {
  startLine: number;
  endLine: number;
  text: string;
}

export interface MemoryDocument {
  agentId: string;
  /** A file's path under the agent's `memory/` folder, `entries/<id>`, or `sessions/<session key>`. */
  path: string;
  source: MemorySource;
  /** Of the text as indexed: a document whose hash is unchanged is not indexed again. */
  hash: string;
  bytes: number;
  modifiedAt: number;
  indexedAt: number;
}

/** Whose memory a search may read: an agent's, all of it or only below these path prefixes. */
export interface MemoryScope {
  agentId: string;
  paths?: readonly string[];
}

export interface MemoryHit extends MemoryChunk {
  agentId: string;
  path: string;
  source: MemorySource;
  modifiedAt: number;
  /** Higher is better; comparable within one search only. */
  score: number;
}

export interface MemoryStore {
  /** Replaces the document and its chunks, unless it is indexed already at this hash (then false). */
  index(document: Omit<MemoryDocument, 'indexedAt'>, chunks: readonly MemoryChunk[], now: number): Promise<boolean>;
  remove(agentId: string, path: string): Promise<void>;
  documents(agentId: string, source?: MemorySource): Promise<MemoryDocument[]>;
  /** An entry an agent wrote, once per key: a second write with the key answers the first's path. */
  write(entry: {
    agentId: string;
    path: string;
    text: string;
    key: string;
    modifiedAt: number;
  }): Promise<{ path: string; created: boolean }>;
  /** Ranked hits for any words of `query` in the scopes; a query with no words finds nothing. */
  search(query: string, scopes: readonly MemoryScope[], limit: number): Promise<MemoryHit[]>;
  read(agentId: string, path: string): Promise<{ document: MemoryDocument; chunks: MemoryChunk[] } | undefined>;
  /** Documents and chunks per agent and source. */
  stats(): Promise<{ agentId: string; source: MemorySource; documents: number; chunks: number }[]>;
}
