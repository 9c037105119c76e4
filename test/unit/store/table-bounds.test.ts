// Every table of the live document says what bounds it (issue #26). The document is what a
// restart reads and what the heap holds, so a table whose rows accumulate with requests
// (idempotency keys did: 2.8 KB of heap per keyed request, forever) grows memory with
// traffic. docs/ARCHITECTURE.md lists every table, with the file that declares it and what
// bounds it; this test reads the declarations (the `Tables` interface of store/state.ts and
// every room's declaration merge of it) and that list, and fails on a table the list lacks
// (add its row: what bounds it), a row for a table that no longer exists, a row whose bound
// is left empty, or an archived table (rows leave for history once final) the list does not
// say so of.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ARCHIVED_TABLES } from '../../../gateway/store/state.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const SECTION = '### What bounds each table';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** table → the file declaring it, from every `interface Tables` in gateway/ (state.ts's and the rooms' merges). */
function declaredTables(): Map<string, string> {
  const tables = new Map<string, string>();
  for (const file of sources(join(ROOT, 'gateway'))) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('interface Tables')) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isInterfaceDeclaration(node) && node.name.text === 'Tables') {
        for (const member of node.members) {
          if (!member.name || !ts.isIdentifier(member.name))
            assert.fail(`${file}: a member of Tables without a plain name`);
          const name = member.name.text;
          assert.ok(!tables.has(name), `table ${name} is declared twice`);
          tables.set(name, relative(ROOT, file));
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return tables;
}

/** The rows of the list in docs/ARCHITECTURE.md: table → [declared in, a row is, what bounds it]. */
function documentedTables(): Map<string, [string, string, string]> {
  const doc = readFileSync(join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8');
  const at = doc.indexOf(`\n${SECTION}`);
  assert.ok(at >= 0, `docs/ARCHITECTURE.md has a section "${SECTION}"`);
  const rows = new Map<string, [string, string, string]>();
  const lines = doc
    .slice(at + 1)
    .split('\n')
    .slice(1);
  let in_table = false;
  for (const line of lines) {
    if (line.startsWith('#')) break;
    if (!line.startsWith('|')) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    const cells = line
      .slice(1, -1)
      .split(' | ')
      .map((cell) => cell.trim());
    const name = /^`([a-z_]+)`$/.exec(cells[0] ?? '')?.[1];
    if (!name) continue; // the head and its rule
    assert.equal(cells.length, 4, `the row of ${name} has 4 cells`);
    assert.ok(!rows.has(name), `${name} is listed twice`);
    rows.set(name, [cells[1]!.replace(/`/g, ''), cells[2]!, cells[3]!]);
  }
  return rows;
}

test('every table of the live document is listed in docs/ARCHITECTURE.md with what bounds it', () => {
  const declared = declaredTables();
  const documented = documentedTables();
  assert.ok(declared.size >= 19, `found only ${declared.size} tables: is the parse right?`);
  const missing = [...declared.keys()].filter((name) => !documented.has(name));
  assert.deepEqual(
    missing,
    [],
    `tables without a row in "${SECTION}" of docs/ARCHITECTURE.md: say what bounds each`,
  );
  const gone = [...documented.keys()].filter((name) => !declared.has(name));
  assert.deepEqual(gone, [], 'rows for tables no file declares any more');
  for (const [name, [file, row, bound]] of documented) {
    assert.equal(file, declared.get(name), `${name} is declared in ${declared.get(name)}`);
    assert.ok(row.length > 3, `${name}: say what a row is`);
    assert.ok(
      bound.length > 10 && !/\b(TODO|unbounded|none)\b/i.test(bound),
      `${name}: say what bounds it ("${bound}")`,
    );
    // A table whose final rows leave for history must say so, and only those may.
    assert.equal(
      /\bhistory\b/.test(bound) && /\bfinal\b|\banswered\b/.test(bound),
      ARCHIVED_TABLES.has(name),
      `${name}: ${ARCHIVED_TABLES.has(name) ? 'an archived table: say that its final rows leave for history' : 'not archived: its bound must not say its rows leave for history'}`,
    );
  }
});
