// PAN lookup and verification as the payments room registers it (service.ts, services.ts).
import type { ServiceModule } from '../service.js';
import { panRouteDocs } from './openapi.js';
import { panRouter } from './routes.js';
import { renderPan } from './views.js';

export const panService: ServiceModule = {
  code: 'pan',
  label: 'PAN verification',
  api: panRouter,
  renderer: () => renderPan,
  route_docs: () => panRouteDocs(),
};
