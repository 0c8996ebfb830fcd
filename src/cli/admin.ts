// `npm run admin -- <command>`: the operator's command line as a process of its own (src/cli/program.ts holds the
// commands). Exit status: 0 done, 1 refused or failed (one line on stderr), 2 usage error.
import { runAdmin } from './program.js';

const status = await runAdmin(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  ownProcess: true,
});
process.exit(status);
