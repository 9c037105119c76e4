// Loaded into a gateway process by bench:keyed-http (`node --expose-gc --import <this>`): on
// SIGUSR2 it collects garbage and writes the process's memory figures, as JSON, to the file
// named by AIHUB_HEAP_PROBE_FILE (through a temp file and a rename, so the reader never sees
// half of it). Plain JavaScript, so that it loads into any tree's built gateway unchanged.
import { renameSync, writeFileSync } from 'node:fs';

const file = process.env.AIHUB_HEAP_PROBE_FILE;
if (file)
  process.on('SIGUSR2', () => {
    globalThis.gc?.();
    globalThis.gc?.();
    const usage = process.memoryUsage();
    writeFileSync(`${file}.tmp`, JSON.stringify({ ...usage, at: Date.now() }));
    renameSync(`${file}.tmp`, file);
  });
