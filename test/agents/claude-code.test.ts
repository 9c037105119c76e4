// claude-code against a real gateway: see suite.ts.
import { claudeCode } from './claude-code.js';
import { agentSuite } from './suite.js';

agentSuite(claudeCode);
