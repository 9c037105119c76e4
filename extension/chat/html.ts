import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

/** The chat page: a strict CSP (nothing remote, scripts only by nonce), assets from the extension. */
export function chatHtml(webview: vscode.Webview, extensionUri: vscode.Uri): string {
  const nonce = randomBytes(18).toString('base64');
  const script = webview.asWebviewUri(
    vscode.Uri.joinPath(extensionUri, 'dist', 'webview', 'chat.js'),
  );
  const style = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', 'chat.css'));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>AIHub Chat</title>
</head>
<body>
<header class="toolbar">
  <label for="model">Model</label>
  <select id="model" title="Model tier"></select>
  <select id="mode" title="Chat: questions and answers. Agent: a task the agent carries out with tools (you approve its edits and commands)." aria-label="Mode">
    <option value="chat">Chat</option>
    <option value="agent">Agent</option>
  </select>
  <button id="history-button" type="button" class="secondary" title="Saved conversations of this workspace" aria-expanded="false" aria-controls="history">History</button>
  <button id="new-chat" type="button" class="secondary" title="Start a new chat">New Chat</button>
</header>
<div id="conversation-title" class="conversation-title"></div>
<section id="history" class="history" hidden aria-label="Saved conversations"></section>
<main id="transcript" role="log" aria-live="polite" aria-label="Chat transcript" tabindex="0"></main>
<form id="composer">
  <div id="context" class="context" aria-label="Context sent with the next message"></div>
  <textarea id="input" rows="3" placeholder="Ask AIHub… (@ to mention a file, Enter to send, Shift+Enter for a new line)" aria-label="Message"></textarea>
  <label id="auto-approve-label" class="auto-approve" hidden title="Apply this task's edits without asking (commands still ask unless allow-listed); Undo Task reverts them"><input type="checkbox" id="auto-approve"> Apply edits without asking</label>
  <div class="composer-buttons">
    <span id="spend" class="spend" aria-live="polite"></span>
    <button id="send" type="submit">Send</button>
    <button id="stop" type="button" class="secondary" hidden title="Stop the reply (Escape)">Stop</button>
  </div>
</form>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}
