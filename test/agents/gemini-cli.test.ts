// gemini-cli against a real gateway: see suite.ts.
import { geminiCli } from './gemini-cli.js';
import { agentSuite } from './suite.js';

agentSuite(geminiCli);
