import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirModeError, ensurePrivateDataDir } from '../../../gateway/store/private-files.ts';
import { tempDir } from '../../support/temp.ts';

const posix = process.platform !== 'win32';

test(
  'a missing data dir is created 0700, parents included; a private one passes',
  { skip: !posix },
  () => {
    const data_dir = join(tempDir('aihub-modes-'), 'a', 'b');
    ensurePrivateDataDir(data_dir);
    assert.equal(statSync(data_dir).mode & 0o777, 0o700);
    writeFileSync(join(data_dir, 'f'), 'x', { mode: 0o600 });
    ensurePrivateDataDir(data_dir);
  },
);

test(
  'group or other access anywhere in it is refused, naming the entry, its mode and the fix',
  { skip: !posix },
  () => {
    const data_dir = tempDir('aihub-modes-');
    writeFileSync(join(data_dir, 'state.json'), '{}', { mode: 0o600 });
    for (const mode of [0o640, 0o604, 0o620, 0o601]) {
      chmodSync(join(data_dir, 'state.json'), mode);
      assert.throws(
        () => ensurePrivateDataDir(data_dir),
        (error: Error) =>
          error instanceof DataDirModeError &&
          error.message.includes(`state.json has mode 0${mode.toString(8)}`) &&
          error.message.includes(`chmod -R go-rwx ${data_dir}`),
      );
    }
    chmodSync(join(data_dir, 'state.json'), 0o600);
    chmodSync(data_dir, 0o711);
    assert.throws(() => ensurePrivateDataDir(data_dir), DataDirModeError);
  },
);

test(
  'a data dir owned by another user is refused',
  { skip: !posix || process.getuid?.() !== 0 },
  () => {
    const data_dir = tempDir('aihub-modes-');
    chownSync(data_dir, 65534, 65534);
    assert.throws(() => ensurePrivateDataDir(data_dir), /owned by uid 65534/);
  },
);
