import * as vscode from 'vscode';
import type { ChatSession } from '../chat/session.js';
import type { Services } from '../services.js';

/** Picks the model tier (from /v1/models when the gateway answers) and saves it in aihub.model. */
export function selectModel(services: Services, session: ChatSession) {
  return async (modelArgument?: unknown): Promise<string | undefined> => {
    let model = typeof modelArgument === 'string' ? modelArgument : undefined;
    if (!model) {
      const models = await refreshModels(services, session);
      const current = services.settings().model;
      const picked = await vscode.window.showQuickPick(
        models.map((m) => ({
          label: m.id,
          description: m.label === m.id ? undefined : m.label.slice(m.id.length).trim(),
          picked: m.id === current,
        })),
        { title: 'AIHub: Select Model', placeHolder: `Current: ${current}` },
      );
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

export async function refreshModels(services: Services, session: ChatSession) {
  try {
    const models = await (await services.client()).models(AbortSignal.timeout(10_000));
    session.setModels(models);
  } catch (error) {
    services.log.warn(
      `Could not list models: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return session.availableModels();
}
