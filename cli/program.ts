import { Command, CommanderError } from "commander";
import { ConfigError } from "@mailroom/kit";
import { cliClients, cliUrls, type CliClients, type CliUrls } from "./client.js";
import type { CliContext } from "./context.js";
import { consoleOutput, type Output } from "./output.js";
import { workspaceCommands } from "./commands/workspace.js";
import { keyCommands } from "./commands/keys.js";
import { senderCommands } from "./commands/senders.js";
import { memberCommands } from "./commands/members.js";
import { contactCommands } from "./commands/contacts.js";
import { templateCommands } from "./commands/templates.js";
import { miscCommands } from "./commands/misc.js";
import { auditCommands } from "./commands/audit.js";
import { storeCommands } from "./commands/store.js";
import { importCommands } from "./commands/import.js";

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Clients to use instead of Connect clients at the configured URLs (tests), by service. */
  clients?: Partial<CliClients>;
  output?: (json: boolean) => Output;
  interactive?: boolean;
}

/**
 * `mailroom …`: the admin CLI over the Connect APIs of the accounts and audience units. Returns the exit code:
 * 0 ok, 1 error, 2 done with problems (rejected CSV rows, domain not verified yet).
 */
export async function runCli(argv: string[], opts: RunOptions = {}): Promise<number> {
  const env = opts.env ?? process.env;
  const json = argv.includes("--json");
  const output = (opts.output ?? consoleOutput)(json);
  let urls: CliUrls;
  try {
    urls = cliUrls(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    output.err(`error: ${err.message}`);
    return 1;
  }
  const ctx: CliContext = {
    ...cliClients(urls),
    ...opts.clients,
    output,
    env,
    urls,
    interactive: opts.interactive ?? Boolean(process.stderr.isTTY),
    exitCode: 0,
  };
  const program = new Command("mailroom")
    .description(`Mailroom admin CLI (accounts at ${urls.accounts}, audience at ${urls.audience}; set MAILROOM_ACCOUNTS_URL and MAILROOM_AUDIENCE_URL to change)`)
    .option("-w, --workspace <id>", "workspace to act on (default: $MAILROOM_WORKSPACE)")
    .option("--json", "print JSON")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => output.out(s.trimEnd()), writeErr: (s) => output.err(s.trimEnd()) });
  workspaceCommands(program, ctx);
  keyCommands(program, ctx);
  senderCommands(program, ctx);
  memberCommands(program, ctx);
  contactCommands(program, ctx);
  templateCommands(program, ctx);
  miscCommands(program, ctx);
  auditCommands(program, ctx);
  storeCommands(program, ctx);
  importCommands(program, ctx);
  for (const sub of program.commands) sub.exitOverride();
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) return err.code === "commander.helpDisplayed" || err.code === "commander.help" || err.code === "commander.version" ? 0 : 1;
    throw err;
  }
  return ctx.exitCode;
}
