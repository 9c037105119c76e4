// Reading a journal from a record in the middle of a large segment (gateway/store/journal.ts):
// the read starts at a line found by bisection instead of the segment's first byte, and must
// give exactly the records and places a read of the whole segment gives, mend a torn tail at
// the right byte, and still refuse damage after the start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJournalPlaced, segmentName } from '../../../gateway/store/journal.ts';

/** One segment of `count` records of varied sizes (some far longer than the bisection's reads). */
function segment(count: number): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'aihub-journal-seek-'));
  const file = join(dir, segmentName(1));
  const lines: string[] = [];
  for (let s = 1; s <= count; s++) {
    const pad = s % 97 === 0 ? 150_000 : 200 + ((s * 7919) % 900); // now and then a 150 kB record
    const record = {
      s,
      t: new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString(),
      ops: [{ o: 'set', t: 'emails', id: `e${s}`, v: `é${'x'.repeat(pad)}` }],
    };
    lines.push(`${JSON.stringify(record)}\n`);
  }
  writeFileSync(file, lines.join(''));
  return { dir, file };
}

const all = (dir: string, after_seq: number, repair = false) => [
  ...readJournalPlaced(dir, after_seq, { repair }),
];

test('a read from the middle of a large segment gives the records and places of a whole read', () => {
  const { dir, file } = segment(6_000);
  try {
    assert.ok(statSync(file).size > 4 << 20, 'larger than the bisection threshold');
    const whole = all(dir, 0);
    assert.equal(whole.length, 6_000);
    const bytes = readFileSync(file);
    for (const after of [1, 96, 97, 1_234, 3_000, 4_850, 5_998, 5_999, 6_000]) {
      const tail = all(dir, after);
      assert.deepEqual(tail, whole.slice(after), `after record ${after}`);
      for (const { record, place } of tail.slice(0, 3)) {
        const line = bytes.subarray(place.offset, place.offset + place.length).toString('utf8');
        assert.equal(JSON.parse(line).s, record.s, 'the place holds the record');
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('from the middle of a large segment: a torn last line is cut at its own byte, damage before the end is refused', () => {
  const { dir, file } = segment(5_000);
  try {
    const size = statSync(file).size;
    appendFileSync(file, '{"s":5001,"t":"2026-01-01T00:00:00.000Z","ops":[{"o":"se');
    const torn: number[] = [];
    const tail = readJournalPlaced(dir, 4_990, {
      repair: true,
      onTornLine: (_file, _line, cut) => torn.push(cut),
    });
    assert.deepEqual(
      [...tail].map(({ record }) => record.s),
      [4_991, 4_992, 4_993, 4_994, 4_995, 4_996, 4_997, 4_998, 4_999, 5_000],
    );
    assert.equal(torn.length, 1);
    assert.equal(statSync(file).size, size, 'the torn line is gone, every whole one stays');

    // A line after the start that does not parse, with whole lines after it: damage.
    const text = readFileSync(file, 'utf8');
    const at = text.indexOf('{"s":4995,');
    writeFileSync(file, `${text.slice(0, at)}{"s":4995,oops${text.slice(at + 10)}`);
    assert.throws(() => all(dir, 4_990), /not a valid record/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
