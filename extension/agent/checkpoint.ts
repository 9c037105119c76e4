// The checkpoint of a task: before the task first writes a file, the file's bytes (or that it did
// not exist, and which folders the write had to make) are kept, in the workspace's storage so that
// Undo Task works after a restart too. Undo writes every changed file back and deletes the files
// and folders the task made; a file changed again since the task is undone only when the user agrees.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { dirtyDocument, readIfFile, writeWorkspaceFile } from './files.js';

interface FileRecord {
  /** fsPath of the file. */
  path: string;
  display: string;
  /** The bytes before the task (base64); absent when the task made the file. */
  before?: string;
  /** sha256 of what the task last wrote. */
  after?: string;
}

export interface CheckpointData {
  taskId: string;
  title: string;
  createdAt: number;
  files: FileRecord[];
  /** Folders the task's writes made, deepest last (removed deepest first when empty). */
  folders: string[];
  undone: boolean;
}

export interface UndoResult {
  taskId: string;
  restored: string[];
  deleted: string[];
  /** Files changed after the task whose undo the user declined (nothing was undone then). */
  declined: string[];
}

const KEEP_CHECKPOINTS = 20;

export class TaskCheckpoint {
  private readonly data: CheckpointData;

  constructor(taskId: string, title: string) {
    this.data = { taskId, title, createdAt: Date.now(), files: [], folders: [], undone: false };
  }

  get taskId(): string {
    return this.data.taskId;
  }

  /** Files the task changed (existing before) and made, as displayed paths. */
  get changed(): string[] {
    return this.data.files.filter((f) => f.before !== undefined).map((f) => f.display);
  }

  get created(): string[] {
    return this.data.files.filter((f) => f.before === undefined).map((f) => f.display);
  }

  get empty(): boolean {
    return this.data.files.length === 0;
  }

  snapshot(): CheckpointData {
    return structuredClone(this.data);
  }

  /** Records the file's state before the task's first write to it (once per file). */
  async before(path: string, display: string): Promise<void> {
    if (this.data.files.some((f) => f.path === path)) return;
    const existing = await readIfFile(path);
    if (existing) {
      this.data.files.push({ path, display, before: existing.toString('base64') });
      return;
    }
    // The folders this write will have to make, outermost first.
    const made: string[] = [];
    for (let parent = dirname(path); !(await isFolder(parent)); parent = dirname(parent)) {
      made.unshift(parent);
      if (dirname(parent) === parent) break;
    }
    this.data.folders.push(...made.filter((m) => !this.data.folders.includes(m)));
    this.data.files.push({ path, display });
  }

  /** Notes what the task wrote, to tell later whether someone changed the file since. */
  wrote(path: string, bytes: Uint8Array): void {
    const record = this.data.files.find((f) => f.path === path);
    if (record) record.after = sha256(bytes);
  }
}

/**
 * The workspace's task checkpoints: files in the extension's workspace storage folder when it is
 * on this file system, in memory otherwise.
 */
export class CheckpointStore {
  private readonly memory = new Map<string, CheckpointData>();
  private readonly folder: string | undefined;

  constructor(storage: vscode.Uri | undefined) {
    this.folder =
      storage?.scheme === 'file' ? join(storage.fsPath, 'agent-checkpoints') : undefined;
  }

  async save(checkpoint: TaskCheckpoint | CheckpointData): Promise<void> {
    const data = checkpoint instanceof TaskCheckpoint ? checkpoint.snapshot() : checkpoint;
    this.memory.set(data.taskId, data);
    if (!this.folder) return;
    await mkdir(this.folder, { recursive: true });
    // Written whole or not at all: a crash mid-write leaves the previous version.
    const file = join(this.folder, `${data.taskId}.json`);
    await writeFile(`${file}.tmp`, JSON.stringify(data));
    await rename(`${file}.tmp`, file);
    await this.prune();
  }

  /** A task's checkpoint, or the newest one not undone. */
  async load(taskId?: string): Promise<CheckpointData | undefined> {
    const all = await this.list();
    return taskId ? all.find((c) => c.taskId === taskId) : all.find((c) => !c.undone);
  }

  /** Newest first. */
  async list(): Promise<CheckpointData[]> {
    const found = new Map(this.memory);
    const names = this.folder ? await readdir(this.folder).catch(() => [] as string[]) : [];
    for (const name of names) {
      const id = name.replace(/\.json$/, '');
      if (found.has(id) || !/^[\w-]{1,100}\.json$/.test(name)) continue;
      try {
        const data = JSON.parse(await readFile(join(this.folder!, name), 'utf8')) as CheckpointData;
        if (data && data.taskId === id && Array.isArray(data.files)) found.set(id, data);
      } catch {
        /* a damaged checkpoint is skipped */
      }
    }
    return [...found.values()].sort((a, b) => b.createdAt - a.createdAt);
  }

  /**
   * Restores every file the task changed and deletes the files (and then empty folders) it made.
   * `confirm` is asked when some of them changed since the task; declined, nothing is undone.
   */
  async undo(
    data: CheckpointData,
    confirm: (changedSince: string[]) => Promise<boolean>,
  ): Promise<UndoResult> {
    const result: UndoResult = { taskId: data.taskId, restored: [], deleted: [], declined: [] };
    const changedSince: string[] = [];
    for (const file of data.files) {
      const now = await readIfFile(file.path);
      if (
        dirtyDocument(file.path) ||
        (file.after !== undefined && (!now || sha256(now) !== file.after))
      )
        changedSince.push(file.display);
    }
    if (changedSince.length > 0 && !(await confirm(changedSince))) {
      result.declined = changedSince;
      return result;
    }
    for (const file of data.files) {
      if (file.before !== undefined) {
        await writeWorkspaceFile(file.path, Buffer.from(file.before, 'base64'));
        await revertOpenDocument(file.path);
        result.restored.push(file.display);
      } else if (await readIfFile(file.path)) {
        await rm(file.path, { force: true });
        result.deleted.push(file.display);
      }
    }
    for (const folder of [...data.folders].reverse()) {
      const entries = await readdir(folder).catch(() => undefined);
      if (entries && entries.length === 0) await rmdir(folder).catch(() => undefined);
    }
    await this.save({ ...data, undone: true });
    return result;
  }

  private async prune(): Promise<void> {
    const all = await this.list();
    for (const old of all.slice(KEEP_CHECKPOINTS)) {
      this.memory.delete(old.taskId);
      if (this.folder) await rm(join(this.folder, `${old.taskId}.json`), { force: true });
    }
  }
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function isFolder(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** An open editor with unsaved changes of a restored file shows the restored text (as agreed). */
async function revertOpenDocument(path: string): Promise<void> {
  const document = dirtyDocument(path);
  if (!document) return;
  await vscode.window.showTextDocument(document, { preview: false, preserveFocus: true });
  await vscode.commands.executeCommand('workbench.action.files.revert');
}
