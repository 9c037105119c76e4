// Runs the scripted upstream as its own process (the bench gives it its own event loop, as a
// real upstream has). Prints one JSON line {"port": N} when listening; stops on SIGTERM.
import { ScriptedUpstream } from './scripted-upstream.js';

const upstream = await ScriptedUpstream.start(
  { kind: 'ok', chunks: Number(process.env.SCRIPTED_CHUNKS ?? 8) },
  { record: false },
);
process.stdout.write(`${JSON.stringify({ port: upstream.port })}\n`);
process.on('SIGTERM', () => {
  void upstream.close().then(() => process.exit(0));
});
