import * as vscode from 'vscode';
import type { ChatSession } from '../chat/session.js';
import type { Services } from '../services.js';

const ADD_PROVIDER = '$(add) Add Model Provider…';

/** Picks the model tier (from /v1/models when the gateway answers) and saves it in aihub.model. */
export function selectModel(services: Services, session: ChatSession) {
  return async (modelArgument?: unknown): Promise<string | undefined> => {
    let model = typeof modelArgument === 'string' ? modelArgument : undefined;
    if (!model) {
      const models = await session.refreshModels();
      const current = services.settings().model;
      // Only the offline engine answers: offer real models too.
      const offer = services.settings().usesLocalGateway && services.providers.isEmpty;
      const picked = await vscode.window.showQuickPick(
        [
          ...models.map((m) => ({
            label: m.id,
            description: m.label === m.id ? undefined : m.label.slice(m.id.length).trim(),
            picked: m.id === current,
          })),
          ...(offer
            ? [{ label: ADD_PROVIDER, description: 'OpenAI, Anthropic, Gemini, Ollama…' }]
            : []),
        ],
        { title: 'AIHub: Select Model', placeHolder: `Current: ${current}` },
      );
      if (picked?.label === ADD_PROVIDER) {
        await vscode.commands.executeCommand('aihub.addModelProvider');
        return undefined;
      }
      model = picked?.label;
    }
    if (!model) return undefined;
    const config = vscode.workspace.getConfiguration('aihub');
    const target =
      config.inspect('model')?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
    await config.update('model', model, target);
    session.setModels([...session.availableModels()]);
    return model;
  };
}
