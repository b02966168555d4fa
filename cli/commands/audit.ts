import type { Command } from "commander";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ListAuditLogResponseSchema } from "@mailroom/proto/accounts/v1/team_pb.js";
import { action, parseLimit, printJson, UsageError, workspaceOf, type CliContext } from "../context.js";
import { table, when } from "../output.js";

function dateArg(raw: string | undefined, flag: string) {
  if (!raw) return undefined;
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw new UsageError(`${flag} expects an ISO 8601 date, got "${raw}"`);
  return timestampFromDate(d);
}

export function auditCommands(program: Command, ctx: CliContext): void {
  program.command("audit-log")
    .description("the workspace's audit log, newest first (kept one year)")
    .argument("[workspace]", "default: -w / $MAILROOM_WORKSPACE")
    .option("--since <date>", "entries at or after this time")
    .option("--until <date>", "entries before this time")
    .option("--actor <actor>", "kind:id (member:mbr_…, key:key_…, cli:<user>) or a bare id")
    .option("--resource <resource>", "type or type:id (contact, member:mbr_…)")
    .option("--limit <n>", "entries per page", "50")
    .option("--page <token>", "the next-page token a previous call printed")
    .action(action(ctx, async (workspace: string | undefined, opts: { since?: string; until?: string; actor?: string; resource?: string; limit: string; page?: string }, cmd: Command) => {
      const res = await ctx.team.listAuditLog({
        workspaceId: workspace || workspaceOf(ctx, cmd),
        since: dateArg(opts.since, "--since"),
        until: dateArg(opts.until, "--until"),
        actor: opts.actor ?? "",
        resource: opts.resource ?? "",
        limit: parseLimit(opts.limit, "--limit"),
        pageToken: opts.page ?? "",
      });
      if (ctx.output.json) return printJson(ctx, ListAuditLogResponseSchema, res);
      ctx.output.out(table([["AT", "ACTOR", "ACTION", "RESOURCE", "SUMMARY"], ...res.entries.map((e) => [
        when(e.at), `${e.actor?.kind}:${e.actor?.id}`, e.action, `${e.resource?.type}:${e.resource?.id}`,
        Object.entries(e.summary).map(([k, v]) => `${k}=${v}`).join(" ") || "-",
      ])]));
      if (res.nextPageToken) ctx.output.err(`more: --page ${res.nextPageToken}`);
    }));
}
