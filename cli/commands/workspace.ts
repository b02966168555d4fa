import type { Command } from "commander";
import { CreateWorkspaceResponseSchema, GetWorkspaceResponseSchema, ListWorkspacesResponseSchema, SetWorkspaceBannedResponseSchema, SetWorkspaceSendingPausedResponseSchema, UpdateWorkspaceResponseSchema, type Workspace } from "@mailroom/proto/accounts/v1/accounts_pb.js";
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
    ["sending", w.banned ? "refused (banned)" : w.sendingPaused ? `paused since ${when(w.sendingPausedAt)}${w.sendingPausedReason ? `: ${w.sendingPausedReason}` : ""}` : "allowed"],
    ...(w.banned ? [["banned", `since ${when(w.bannedAt)}${w.bannedReason ? `: ${w.bannedReason}` : ""}`]] : []),
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
      const res = await ctx.accounts.createWorkspace({
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
      const res = await ctx.accounts.listWorkspaces({});
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
      const res = await ctx.accounts.getWorkspace({ workspaceId });
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
        const current = (await ctx.accounts.getWorkspace({ workspaceId: id })).workspace!.flags;
        flags = Object.fromEntries(FLAGS.map((f) => [f, on.includes(f) ? true : off.includes(f) ? false : Boolean(current?.[f])])) as Record<FlagName, boolean>;
      }
      const res = await ctx.accounts.updateWorkspace({
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

  // Operator actions (DESIGN §9.2): each emits its webhook event once when it changes the state.
  const hold = (name: string, description: string, call: (id: string, reason: string) => Promise<{ workspace?: Workspace; changed: boolean }>, schema: typeof SetWorkspaceSendingPausedResponseSchema | typeof SetWorkspaceBannedResponseSchema, note: string, reason = true) => {
    const cmd = ws.command(name).description(description).argument("<id>", "workspace id");
    if (reason) cmd.option("--reason <text>", "why (shown to the workspace in refusals and in the webhook event)");
    cmd.action(action(ctx, async (id: string, opts: { reason?: string }) => {
      const res = await call(id, opts.reason ?? "");
      if (ctx.output.json) return printJson(ctx, schema as typeof SetWorkspaceSendingPausedResponseSchema, res as never);
      ctx.output.out(describe(res.workspace!));
      ctx.output.err(res.changed ? note : "unchanged: the workspace already was in that state");
    }));
  };
  hold("pause-sending", "pause a workspace's sending: its emails, batches and broadcasts are refused (403 sending_paused); WORKSPACE_SENDING_EMAILS_PAUSED goes to its webhooks",
    (id, reason) => ctx.accounts.setWorkspaceSendingPaused({ workspaceId: id, paused: true, reason }), SetWorkspaceSendingPausedResponseSchema,
    "sending paused: sends are refused with 403 sending_paused; broadcasts in progress hold until resume-sending");
  hold("resume-sending", "resume a paused workspace's sending (held broadcasts carry on)",
    (id) => ctx.accounts.setWorkspaceSendingPaused({ workspaceId: id, paused: false }), SetWorkspaceSendingPausedResponseSchema,
    "sending resumed", false);
  hold("ban", "ban a workspace: its API keys are refused (403 workspace_banned) and it cannot send; WORKSPACE_BANNED goes to its webhooks",
    (id, reason) => ctx.accounts.setWorkspaceBanned({ workspaceId: id, banned: true, reason }), SetWorkspaceBannedResponseSchema,
    "banned: its API keys are refused (403 workspace_banned) within MAILROOM_AUTH_CACHE_MS");
  hold("unban", "lift a workspace's ban",
    (id) => ctx.accounts.setWorkspaceBanned({ workspaceId: id, banned: false }), SetWorkspaceBannedResponseSchema,
    "ban lifted", false);
}
