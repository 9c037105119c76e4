// The codebase index as other parts of the extension use it (the chat's @codebase, the agent's
// search tool). The index lives in extension/codebase/; this file is the whole interface, so that
// a user of it depends on nothing else there.

/** One chunk of a workspace file close to a query. */
export interface CodebaseHit {
  /** The file's URI (`vscode.Uri.toString()`). */
  uri: string;
  /** Workspace-relative path, as vscode.workspace.asRelativePath shows it. */
  path: string;
  /** 1-based, inclusive line range of the chunk in the file as it is now. */
  startLine: number;
  endLine: number;
  /** The chunk's lines, read from the file (or its open editor) when the search ran. */
  text: string;
  /** Cosine similarity to the query, -1..1; hits come best first. */
  score: number;
}

export interface CodebaseSearchResult {
  hits: CodebaseHit[];
  /**
   * What embedding the query cost (already counted in the extension's spend); undefined when
   * the gateway did not say.
   */
  cost: { amount: number; currency: string } | undefined;
}

export interface CodebaseSearchOptions {
  /** How many hits at most (default 8, at most 50). */
  limit?: number;
  signal?: AbortSignal;
}

/** What the chat and the agent see of the index. */
export interface CodebaseSearch {
  /**
   * True when indexing is on for this workspace, the workspace is trusted and the index holds
   * at least one chunk: search() may be called. (It may still be catching up with changes.)
   */
  readonly available: boolean;
  /**
   * Embeds the query through the gateway (billed on the user's key, counted in spend, refused
   * quietly with an Error when the daily spending cap would be passed) and returns the closest
   * chunks. Throws when not available.
   */
  search(query: string, options?: CodebaseSearchOptions): Promise<CodebaseSearchResult>;
}
