// The JSON-file store's marks (`Store.marks`): one process runs every transaction, so its
// memory is what every transaction sees. The room restores them from history at start; a
// mark set in a transaction is undone with it.
import type { Row, TableName } from './state.js';
import type { Marks, Tx } from './types.js';

export class MemoryMarks<T extends TableName> implements Marks<T> {
  private readonly marks = new Map<string, Row<T>>();

  get(_tx: Tx, key: string): Row<T> | undefined {
    return this.marks.get(key);
  }

  set(tx: Tx, key: string, mark: Row<T>): void {
    const before = this.marks.get(key);
    this.marks.set(key, mark);
    tx.onUndo(() => {
      if (this.marks.get(key) !== mark) return;
      if (before) this.marks.set(key, before);
      else this.marks.delete(key);
    });
  }

  restore<R>(read: () => Promise<R[]>): Promise<R[]> {
    return read();
  }

  note(key: string, mark: Row<T>): void {
    this.marks.set(key, mark);
  }

  sweep(expired: (mark: Row<T>) => boolean): void {
    for (const [key, mark] of this.marks) if (expired(mark)) this.marks.delete(key);
  }
}
