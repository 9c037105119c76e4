// The "AIHub Agent" terminal: every command a task runs is shown there as it runs (the command
// line, its output, its exit code), so the user sees what ran; the output the model gets is
// captured separately (command.ts).
import * as vscode from 'vscode';

export class AgentTerminal implements vscode.Disposable {
  private terminal: vscode.Terminal | undefined;
  private readonly writes = new vscode.EventEmitter<string>();
  private opened: Promise<void> | undefined;
  private readonly closeListener: vscode.Disposable;

  constructor() {
    this.closeListener = vscode.window.onDidCloseTerminal((closed) => {
      if (closed === this.terminal) {
        this.terminal = undefined;
        this.opened = undefined;
      }
    });
  }

  /** Shows the terminal (without taking the focus) and writes the command line. */
  async begin(command: string, cwd: string): Promise<void> {
    if (!this.terminal) {
      let ready: () => void = () => undefined;
      this.opened = new Promise<void>((resolve) => (ready = resolve));
      const pty: vscode.Pseudoterminal = {
        onDidWrite: this.writes.event,
        open: () => ready(),
        close: () => undefined,
      };
      this.terminal = vscode.window.createTerminal({ name: 'AIHub Agent', pty });
    }
    this.terminal.show(true);
    // Bounded: a terminal that the workbench never opens does not hold the task.
    await Promise.race([this.opened, new Promise((r) => setTimeout(r, 2_000))]);
    this.write(`\x1b[1m${cwd}$ ${command}\x1b[0m\n`);
  }

  write(text: string): void {
    this.writes.fire(text.replace(/\r?\n/g, '\r\n'));
  }

  end(summary: string): void {
    this.write(`\x1b[2m[${summary}]\x1b[0m\n\n`);
  }

  dispose(): void {
    this.closeListener.dispose();
    this.terminal?.dispose();
    this.writes.dispose();
  }
}
