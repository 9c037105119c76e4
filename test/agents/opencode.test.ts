// opencode against a real gateway: see suite.ts.
import { opencode } from './opencode.js';
import { agentSuite } from './suite.js';

agentSuite(opencode);
