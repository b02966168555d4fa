import type { Command } from "commander";
import { CreateWorkspaceResponseSchema, GetWorkspaceResponseSchema, ListWorkspacesResponseSchema, UpdateWorkspaceResponseSchema, type Workspace } from "../../gen/mailroom/directory/v1/directory_pb.js";
import { action, parseBool, parseLimit, printJson, UsageError, type CliContext } from "../context.js";
import { table, when } from "../output.js";

const FLAGS = ["broadcastEarlyAccess", "emailApiAddon", "verified"] as const;
type FlagName = (typeof FLAGS)[number];

function parseFlags(list: string[] = []): FlagName[] {
  const names = list.flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!(FLAGS as readonly string[]).includes(n)) throw new UsageError(`unknown flag "${n}"; flags: ${FLAGS.join(", ")}`);
  return names as FlagName[];
}

function describe(w: Workspace): string {
  const flags = FLAGS.filter((f) => w.flags?.[f]).join(",") || "-";
  return table([
    ["id", w.id], ["name", w.name], ["timezone", w.timezone], ["flags", flags],
    ["monthlyLimit", String(w.monthlyLimit)], ["sendingAccountNew", String(w.sendingAccountNew)], ["created", when(w.createdAt)],
  ]);
}

export function workspaceCommands(program: Command, ctx: CliContext): void {
  const ws = program.command("workspace").description("create, list and update workspaces");

  ws.command("create")
    .description("create a workspace")
    .requiredOption("--name <name>", "display name")
    .option("--id <id>", "workspace id (generated ws_… when omitted)")
    .option("--timezone <tz>", "IANA time zone", "UTC")
    .option("--limit <n>", "monthly sending limit")
    .option("--flags <list>", `comma-separated flags to enable: ${FLAGS.join(", ")}`)
    .option("--new-account", "the sending account is new (warm-up required)")
    .action(action(ctx, async (opts: { name: string; id?: string; timezone: string; limit?: string; flags?: string; newAccount?: boolean }) => {
      const enabled = parseFlags(opts.flags ? [opts.flags] : []);
      const res = await ctx.client.createWorkspace({
        id: opts.id ?? "",
        name: opts.name,
        timezone: opts.timezone,
        monthlyLimit: opts.limit !== undefined ? BigInt(parseLimit(opts.limit, "--limit")) : 0n,
        sendingAccountNew: opts.newAccount ?? false,
        flags: Object.fromEntries(FLAGS.map((f) => [f, enabled.includes(f)])),
      });
      if (ctx.output.json) return printJson(ctx, CreateWorkspaceResponseSchema, res);
      ctx.output.out(describe(res.workspace!));
    }));

  ws.command("list")
    .description("list workspaces")
    .action(action(ctx, async () => {
      const res = await ctx.client.listWorkspaces({});
      if (ctx.output.json) return printJson(ctx, ListWorkspacesResponseSchema, res);
      ctx.output.out(table([["ID", "NAME", "TIMEZONE", "LIMIT", "FLAGS"], ...res.workspaces.map((w) => [
        w.id, w.name, w.timezone, String(w.monthlyLimit), FLAGS.filter((f) => w.flags?.[f]).join(",") || "-",
      ])]));
    }));

  ws.command("get")
    .description("show a workspace (default: -w)")
    .argument("[id]", "workspace id")
    .action(action(ctx, async (id: string | undefined, _opts: unknown, cmd: Command) => {
      const workspaceId = id ?? (cmd.optsWithGlobals() as { workspace?: string }).workspace ?? ctx.env.MAILROOM_WORKSPACE;
      if (!workspaceId) throw new UsageError("which workspace? pass an id or -w");
      const res = await ctx.client.getWorkspace({ workspaceId });
      if (ctx.output.json) return printJson(ctx, GetWorkspaceResponseSchema, res);
      ctx.output.out(describe(res.workspace!));
    }));

  ws.command("update")
    .description("change a workspace's settings and flags")
    .argument("<id>", "workspace id")
    .option("--name <name>")
    .option("--timezone <tz>")
    .option("--limit <n>", "monthly sending limit")
    .option("--new-account <bool>", "sending account is new (true|false)")
    .option("--enable <flags>", `flags to turn on: ${FLAGS.join(", ")}`)
    .option("--disable <flags>", "flags to turn off")
    .action(action(ctx, async (id: string, opts: { name?: string; timezone?: string; limit?: string; newAccount?: string; enable?: string; disable?: string }) => {
      const on = parseFlags(opts.enable ? [opts.enable] : []);
      const off = parseFlags(opts.disable ? [opts.disable] : []);
      let flags: Record<FlagName, boolean> | undefined;
      if (on.length || off.length) {
        // Flags travel as a whole: start from the current ones.
        const current = (await ctx.client.getWorkspace({ workspaceId: id })).workspace!.flags;
        flags = Object.fromEntries(FLAGS.map((f) => [f, on.includes(f) ? true : off.includes(f) ? false : Boolean(current?.[f])])) as Record<FlagName, boolean>;
      }
      const res = await ctx.client.updateWorkspace({
        workspaceId: id,
        name: opts.name,
        timezone: opts.timezone,
        monthlyLimit: opts.limit !== undefined ? BigInt(parseLimit(opts.limit, "--limit")) : undefined,
        sendingAccountNew: opts.newAccount !== undefined ? parseBool(opts.newAccount, "--new-account") : undefined,
        flags,
      });
      if (ctx.output.json) return printJson(ctx, UpdateWorkspaceResponseSchema, res);
      ctx.output.out(describe(res.workspace!));
    }));
}
