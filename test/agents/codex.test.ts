// codex against a real gateway: see suite.ts.
import { codex } from './codex.js';
import { agentSuite } from './suite.js';

agentSuite(codex);
