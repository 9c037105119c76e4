// The interface between the codebase index (extension/codebase/, "Codebase as context") and its
// users: `@codebase` in a chat message and the agent's search tool (extension/agent/). The agent
// depends only on this file, so either side can change its insides freely.
import type { ReplyMeta } from '../chat/protocol.js';

/** One chunk of a workspace file that matched a query. */
export interface CodebaseHit {
  /** Workspace-relative path with `/` separators (as `vscode.workspace.asRelativePath(uri, false)`). */
  path: string;
  /** 1-based, inclusive line range of the chunk. */
  startLine: number;
  endLine: number;
  /** Similarity to the query, higher is closer (cosine, in [-1, 1]). */
  score: number;
  /** The chunk's text (bounded by the index's chunk size). */
  text: string;
}

export interface CodebaseSearchResult {
  hits: CodebaseHit[];
  /** The bill of the query's embedding (`x_aihub` of POST /v1/embeddings), when one was made. */
  meta?: ReplyMeta;
}

/** The codebase index as its users see it. */
export interface CodebaseSearch {
  /** True when indexing is turned on for this workspace and the index has at least one chunk. */
  readonly ready: boolean;
  /**
   * The `limit` chunks closest to `query` (one embedding request on the user's key, recorded in
   * the spend by the index itself). Rejects with an AbortError when `signal` aborts.
   */
  search(
    query: string,
    options: { limit: number; signal?: AbortSignal },
  ): Promise<CodebaseSearchResult>;
}
