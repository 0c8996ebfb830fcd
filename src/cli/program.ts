// `npm run admin -- <command>`: the operator's command line. Users, API keys (with last use, and a recovery key for
// an operator who lost every key), effective permissions with the rule that decided them, prefixes.
// It works on the configured database (DATABASE_URL, or the embedded database under DATA_DIR, read as `npm start`
// reads them), or, with --url and --key, through a running server's GraphQL admin API.
// Exit status: 0 done, 1 refused or failed (one line on stderr), 2 usage error. `runAdmin` runs one command line
// and returns its exit status; src/cli/admin.ts is the process that calls it with its own arguments and streams.
import v8 from 'node:v8';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { loadConfig, ConfigError, type Config } from '../config.js';
import { openRemote } from './remote.js';
import { CliError, type Operator } from './operator.js';
import * as out from './output.js';
import { MAX_INT } from '../input/numbers.js';

interface GlobalOptions {
  json?: boolean;
  url?: string;
  key?: string;
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > MAX_INT)
    throw new InvalidArgumentError('expected a whole number (an id).');
  return Number(value);
}

function nameList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

async function operator(opts: GlobalOptions, io: AdminIo): Promise<Operator> {
  if (opts.url || opts.key) {
    if (!opts.url || !opts.key)
      throw new UsageError('--url and --key go together: the server to act through and the API key to act with.');
    return openRemote(opts.url, opts.key);
  }
  let config: Config;
  try {
    config = loadConfig(io.env);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`Configuration error: ${err.message}`);
    throw err;
  }
  // The embedded database is PostgreSQL compiled to WebAssembly. A command runs a few statements and exits, so V8's
  // optimising tier would only compile code that never pays back: V8's baseline compiler alone takes a command on it
  // from about 2.3 s of CPU to 1.3 s (1.45 s to 1.1 s of waiting). Set before the engine is compiled, on its first open.
  if (!config.databaseUrl && io.ownProcess) v8.setFlagsFromString('--liftoff-only');
  // Loaded only here: the database client is most of the CLI's start-up time, and --url does not need it.
  const { openDirect } = await import('./direct.js');
  return openDirect(config);
}

class UsageError extends Error {}

/** Where a command line runs: its environment and output; `ownProcess` when the process is the CLI's alone. */
export interface AdminIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** The process runs this command line alone (src/cli/admin.ts): it may set the engine's flags for a short run. */
  ownProcess?: boolean;
}

/** The admin command line, its commands writing to `io`. */
function adminProgram(io: AdminIo): Command {
  /** Runs one command: opens the operator, prints `text(result)` or the result as JSON, closes. */
  function action<A extends unknown[], R>(work: (op: Operator, ...args: A) => Promise<R>, text: (r: R) => string) {
    return async (...args: [...A, Record<string, unknown>, Command]) => {
      const cmd = args[args.length - 1] as Command;
      const opts = cmd.optsWithGlobals<GlobalOptions>();
      const op = await operator(opts, io);
      try {
        const result = await work(op, ...(args.slice(0, -1) as unknown as A));
        io.stdout(`${opts.json ? JSON.stringify(result, null, 2) : text(result)}\n`);
      } finally {
        await op.close();
      }
    };
  }

  const program = new Command('admin')
    .description(
      'Operate the Downloads Catalogue Service: users, API keys, permissions and prefixes, on the configured database (DATABASE_URL or DATA_DIR, as npm start reads them).',
    )
    .option('--json', 'print JSON for scripts instead of tables')
    .option('--url <url>', "act through this running server's GraphQL admin API instead of the database (needs --key)")
    .option('--key <key>', "the API key for --url: a super-user key, or an administrator's key with a write scope")
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text) })
    .exitOverride();

  const users = program.command('users').description('list, create and regroup forum users');
  users
    .command('list')
    .description('list users by id with their groups')
    .option('--search <text>', 'only users whose name contains this text (any case)')
    .option('--page <n>', 'page of 100 users, from 1', wholeNumber)
    .action(action((op, o: { search?: string; page?: number }) => op.listUsers(o), out.users));
  users
    .command('create <username>')
    .description('create a user (primary group "registered")')
    .option('--admin', 'make the user an administrator (administrator group)')
    .option('--moderator', 'make the user a moderator (moderator group)')
    .option('--groups <names>', 'extra groups by name, comma-separated', nameList)
    .action(
      action(
        (op, username: string, o: { admin?: boolean; moderator?: boolean; groups?: string[] }) =>
          op.createUser({
            username,
            isAdmin: Boolean(o.admin),
            isModerator: Boolean(o.moderator),
            groups: o.groups ?? [],
          }),
        out.user,
      ),
    );
  users
    .command('set-groups <user> <groups>')
    .description(
      'replace a user\'s secondary groups (comma-separated names, "" for none); the moderator and administrator flags follow those groups',
    )
    .action(
      action(
        async (op, ref: string, groups: string) => op.setGroups((await op.findUser(ref)).id, nameList(groups)),
        out.user,
      ),
    );

  const keys = program.command('keys').description('list, create, revoke and recover API keys');
  keys
    .command('list')
    .description('list keys with their state and last use (never the keys themselves)')
    .option('--user <user>', 'only the keys bound to this user (id or username)')
    .addOption(new Option('--active', 'only active keys').conflicts('revoked'))
    .option('--revoked', 'only revoked keys')
    .option('--page <n>', 'page of 100 keys, from 1', wholeNumber)
    .action(
      action(
        async (op, o: { user?: string; active?: boolean; revoked?: boolean; page?: number }) =>
          op.listKeys({
            userId: o.user !== undefined ? (await op.findUser(o.user)).id : undefined,
            active: o.active ? true : o.revoked ? false : undefined,
            page: o.page,
          }),
        out.keys,
      ),
    );
  keys
    .command('create')
    .description('create a key and print it once')
    .addOption(
      new Option('--type <type>', 'whom requests act as').choices(['guest', 'user', 'super']).makeOptionMandatory(),
    )
    .requiredOption(
      '--scopes <scopes>',
      '"all", or comma-separated scopes such as mc_dm_category:read,mc_dm_download:read',
      nameList,
    )
    .option('--user <user>', 'the bound user of a user key (id or username)')
    .option('--title <title>', 'a label to recognise the key by')
    .action(
      action(
        async (op, o: { type: 'guest' | 'user' | 'super'; scopes: string[]; user?: string; title?: string }) =>
          op.createKey({
            type: o.type,
            scopes: o.scopes,
            title: o.title,
            userId: o.user !== undefined ? (await op.findUser(o.user)).id : undefined,
          }),
        out.newKey,
      ),
    );
  keys
    .command('revoke')
    .description('revoke a key: requests with it answer api_key_inactive')
    .argument('<id>', 'the key id (keys list shows it)', wholeNumber)
    .action(
      action(
        (op, id: number) => op.revokeKey(id),
        (k) => `Key ${k.id} (${k.type}${k.title ? `, "${k.title}"` : ''}) is revoked.`,
      ),
    );
  keys
    .command('recover')
    .description(
      'issue a fresh super-user key with every scope and print it once: the way back in after losing every key (on the database directly)',
    )
    .option(
      '--title <title>',
      'a label for the new key',
      `Recovery key (admin CLI, ${new Date().toISOString().slice(0, 10)})`,
    )
    .action(action((op, o: { title: string }) => op.recover(o.title), out.newKey));

  const perms = program.command('perms').description('explain permissions');
  perms
    .command('show')
    .description(
      'each permission of a user in a category or globally: granted or not, and the group rule that decided it',
    )
    .argument('<user>', 'user id, username, or 0 for the guest visitor')
    .argument('[category]', 'category id; omitted: the global settings', wholeNumber)
    .action(
      action(async (op, ref: string, category: number | undefined) => {
        const userId = ref === '0' ? 0 : (await op.findUser(ref)).id;
        return op.explain(userId, category);
      }, out.explained),
    );

  const prefixes = program.command('prefixes').description('download title prefixes');
  prefixes
    .command('list')
    .description('list prefixes and the categories offering them')
    .action(action((op) => op.listPrefixes(), out.prefixes));
  prefixes
    .command('create <title>')
    .description('create a prefix')
    .action(
      action(
        (op, title: string) => op.createPrefix(title),
        (p) => `Created prefix ${p.id} "${p.title}".`,
      ),
    );
  prefixes
    .command('assign')
    .description('offer a prefix in a category')
    .argument('<prefix>', 'prefix id', wholeNumber)
    .argument('<category>', 'category id', wholeNumber)
    .action(
      action(
        (op, prefix: number, category: number) => op.assignPrefix(prefix, category),
        (p) => `Prefix ${p.id} "${p.title}" is offered in categories ${p.categoryIds.join(', ')}.`,
      ),
    );

  return program;
}

/** Runs one admin command line (`args` without node and the script) and returns its exit status. */
export async function runAdmin(args: string[], io: AdminIo): Promise<number> {
  try {
    await adminProgram(io).parseAsync(args, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed the message (or the help) already.
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2;
    }
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    io.stderr(`error: ${message.split('\n')[0]}\n`);
    return 1;
  }
}
