import type { ActionId } from './chat/protocol.js';

/** The command each error action runs. */
export const ACTION_COMMANDS: Record<ActionId, string> = {
  setApiKey: 'aihub.setApiKey',
  topUp: 'aihub.topUp',
  startLocalGateway: 'aihub.startLocalGateway',
  selectModel: 'aihub.selectModel',
  openSettings: 'aihub.openSettings',
  addModelProvider: 'aihub.addModelProvider',
};
