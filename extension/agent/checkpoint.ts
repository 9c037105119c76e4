// The checkpoint of a task: before the task first writes a file, the file's bytes (or that it did
// not exist, and which folders the write had to make) are kept, in the workspace's storage so that
// Undo Task works after a restart too. Undo writes every changed file back and deletes the files
// and folders the task made; a file changed again since the task is undone only when the user agrees.
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';

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
  async before(uri: vscode.Uri, display: string): Promise<void> {
    if (this.data.files.some((f) => f.path === uri.fsPath)) return;
    const existing = await readIfExists(uri);
    if (existing) {
      this.data.files.push({
        path: uri.fsPath,
        display,
        before: Buffer.from(existing).toString('base64'),
      });
      return;
    }
    // The folders this write will have to make, outermost first.
    const made: string[] = [];
    for (let parent = parentOf(uri); ; parent = parentOf(parent)) {
      if (await readIfExists(parent, true)) break;
      made.unshift(parent.fsPath);
      if (parentOf(parent).fsPath === parent.fsPath) break;
    }
    this.data.folders.push(...made.filter((m) => !this.data.folders.includes(m)));
    this.data.files.push({ path: uri.fsPath, display });
  }

  /** Notes what the task wrote, to tell later whether someone changed the file since. */
  wrote(uri: vscode.Uri, bytes: Uint8Array): void {
    const record = this.data.files.find((f) => f.path === uri.fsPath);
    if (record) record.after = sha256(bytes);
  }
}

/** The workspace's task checkpoints (in its storage folder; in memory without one). */
export class CheckpointStore {
  private readonly memory = new Map<string, CheckpointData>();

  constructor(private readonly storage: vscode.Uri | undefined) {}

  private get folder(): vscode.Uri | undefined {
    return this.storage && vscode.Uri.joinPath(this.storage, 'agent-checkpoints');
  }

  async save(checkpoint: TaskCheckpoint | CheckpointData): Promise<void> {
    const data = checkpoint instanceof TaskCheckpoint ? checkpoint.snapshot() : checkpoint;
    this.memory.set(data.taskId, data);
    const folder = this.folder;
    if (!folder) return;
    await vscode.workspace.fs.createDirectory(folder);
    await vscode.workspace.fs.writeFile(
      vscode.Uri.joinPath(folder, `${data.taskId}.json`),
      Buffer.from(JSON.stringify(data)),
    );
    await this.prune(folder);
  }

  /** A task's checkpoint, or the newest one not undone. */
  async load(taskId?: string): Promise<CheckpointData | undefined> {
    const all = await this.list();
    return taskId ? all.find((c) => c.taskId === taskId) : all.find((c) => !c.undone);
  }

  /** Newest first. */
  async list(): Promise<CheckpointData[]> {
    const found = new Map(this.memory);
    const folder = this.folder;
    if (folder) {
      const entries = await vscode.workspace.fs.readDirectory(folder).then(
        (e) => e,
        () => [] as [string, vscode.FileType][],
      );
      for (const [name] of entries) {
        const id = name.replace(/\.json$/, '');
        if (found.has(id) || !/^[\w-]{1,100}\.json$/.test(name)) continue;
        try {
          const data = JSON.parse(
            Buffer.from(
              await vscode.workspace.fs.readFile(vscode.Uri.joinPath(folder, name)),
            ).toString('utf8'),
          ) as CheckpointData;
          if (data && data.taskId === id && Array.isArray(data.files)) found.set(id, data);
        } catch {
          /* a damaged checkpoint is skipped */
        }
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
      const uri = vscode.Uri.file(file.path);
      const now = await readIfExists(uri);
      const dirty = vscode.workspace.textDocuments.some(
        (d) => d.uri.fsPath === file.path && d.isDirty,
      );
      if (dirty || (file.after !== undefined && (!now || sha256(now) !== file.after)))
        changedSince.push(file.display);
    }
    if (changedSince.length > 0 && !(await confirm(changedSince))) {
      result.declined = changedSince;
      return result;
    }
    for (const file of data.files) {
      const uri = vscode.Uri.file(file.path);
      if (file.before !== undefined) {
        await vscode.workspace.fs.writeFile(uri, Buffer.from(file.before, 'base64'));
        await revertOpenDocument(uri);
        result.restored.push(file.display);
      } else if (await readIfExists(uri)) {
        await vscode.workspace.fs.delete(uri, { useTrash: false });
        result.deleted.push(file.display);
      }
    }
    for (const folder of [...data.folders].reverse()) {
      const uri = vscode.Uri.file(folder);
      const entries = await vscode.workspace.fs.readDirectory(uri).then(
        (e) => e,
        () => undefined,
      );
      if (entries && entries.length === 0) await vscode.workspace.fs.delete(uri);
    }
    await this.save({ ...data, undone: true });
    return result;
  }

  private async prune(folder: vscode.Uri): Promise<void> {
    const all = await this.list();
    for (const old of all.slice(KEEP_CHECKPOINTS)) {
      this.memory.delete(old.taskId);
      await vscode.workspace.fs
        .delete(vscode.Uri.joinPath(folder, `${old.taskId}.json`))
        .then(undefined, () => undefined);
    }
  }
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The file's bytes, or undefined when it does not exist (`folder`: whether a folder exists). */
async function readIfExists(uri: vscode.Uri, folder = false): Promise<Uint8Array | undefined> {
  try {
    const stat = await vscode.workspace.fs.stat(uri);
    if (folder) return stat.type & vscode.FileType.Directory ? new Uint8Array() : undefined;
    if (!(stat.type & vscode.FileType.File)) return undefined;
    return await vscode.workspace.fs.readFile(uri);
  } catch {
    return undefined;
  }
}

function parentOf(uri: vscode.Uri): vscode.Uri {
  return vscode.Uri.joinPath(uri, '..');
}

/** An open, unsaved editor of a restored file shows the restored text (its changes are dropped, as agreed). */
async function revertOpenDocument(uri: vscode.Uri): Promise<void> {
  const document = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === uri.fsPath);
  if (!document?.isDirty) return;
  await vscode.window.showTextDocument(document, { preview: false, preserveFocus: true });
  await vscode.commands.executeCommand('workbench.action.files.revert');
}
