import { appendFileSync } from 'node:fs';
import Mocha from 'mocha';

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_TEST_FAIL, EVENT_TEST_PASS, EVENT_TEST_PENDING } =
  Mocha.Runner.constants;

/** A spec-like reporter that writes every line both to the console and to AIHUB_TEST_RESULTS. */
export class FileReporter {
  constructor(runner: Mocha.Runner) {
    const file = process.env.AIHUB_TEST_RESULTS;
    const write = (line: string): void => {
      console.log(`[AIHub test] ${line}`);
      if (file) appendFileSync(file, `${line}\n`);
    };
    const failures: Array<{ title: string; error: Error }> = [];
    let depth = 0;
    runner.on(EVENT_SUITE_BEGIN, (suite: Mocha.Suite) => {
      if (suite.title) write(`${'  '.repeat(depth)}${suite.title}`);
      depth++;
      suite.once('end', () => depth--);
    });
    runner.on(EVENT_TEST_PASS, (test: Mocha.Test) =>
      write(`${'  '.repeat(depth)}ok ${test.title} (${test.duration} ms)`),
    );
    runner.on(EVENT_TEST_PENDING, (test: Mocha.Test) =>
      write(`${'  '.repeat(depth)}skipped ${test.title}`),
    );
    runner.on(EVENT_TEST_FAIL, (test: Mocha.Test, error: Error) => {
      failures.push({ title: test.fullTitle(), error });
      write(`${'  '.repeat(depth)}FAILED ${test.title}`);
    });
    runner.once(EVENT_RUN_END, () => {
      const stats = runner.stats!;
      failures.forEach(({ title, error }, i) =>
        write(`\n${i + 1}) ${title}\n${error.stack ?? error.message}`),
      );
      write(`# passing ${stats.passes}`);
      write(`# failing ${stats.failures}`);
      write(`# pending ${stats.pending}`);
    });
  }
}
