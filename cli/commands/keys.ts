import type { Command } from "commander";
import { CreateApiKeyResponseSchema, ListApiKeysResponseSchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { action, printJson, workspaceOf, type CliContext } from "../context.js";
import { table, when } from "../output.js";

export function keyCommands(program: Command, ctx: CliContext): void {
  const key = program.command("key").description("API keys (stored hashed; a new key is shown once)");

  key.command("create")
    .description("create an API key and print it once")
    .option("--name <name>", "a label for the key", "")
    .option("--scopes <list>", "comma-separated scopes (api_user, api_read, admin); an empty list gives no scope", "api_user")
    .option("--role <role>", "EDITOR (= api_user), VIEWER (= api_read, read only) or ADMIN (= api_user + admin: also the audit log; needs --owner, an OWNER or ADMIN member) instead of --scopes")
    .option("--owner <member>", "the member the key belongs to (mbr_… id or email): the key never acts above the member's role and stops working when the member is removed")
    .action(action(ctx, async (opts: { name: string; scopes: string; role?: string; owner?: string }, cmd: Command) => {
      const res = await ctx.accounts.createApiKey({
        workspaceId: workspaceOf(ctx, cmd),
        name: opts.name,
        ownerMemberId: opts.owner ?? "",
        ...(opts.role ? { role: opts.role.toUpperCase() } : { scopes: opts.scopes.split(",").map((s) => s.trim()).filter(Boolean) }),
      });
      if (ctx.output.json) return printJson(ctx, CreateApiKeyResponseSchema, res);
      ctx.output.out(res.plainKey);
      const owner = res.apiKey!.ownerMemberId ? `, owner ${res.apiKey!.ownerMemberId}` : "";
      ctx.output.err(`key ${res.apiKey!.id} (scopes: ${res.apiKey!.scopes.join(", ")}${owner}). Store it now: it is not shown again.`);
    }));

  key.command("list")
    .description("list the workspace's keys (prefixes only)")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.listApiKeys({ workspaceId: workspaceOf(ctx, cmd) });
      if (ctx.output.json) return printJson(ctx, ListApiKeysResponseSchema, res);
      ctx.output.out(table([["ID", "PREFIX", "NAME", "ROLE", "SCOPES", "OWNER", "CREATED", "REVOKED"], ...res.apiKeys.map((k) => [
        k.id, `${k.prefix}…`, k.name || "-", k.role, k.scopes.join(",") || "-", k.ownerMemberId || "-", when(k.createdAt), when(k.revokedAt) || "-",
      ])]));
    }));

  key.command("revoke")
    .description("revoke a key by id")
    .argument("<keyId>")
    .action(action(ctx, async (keyId: string, _opts: unknown, cmd: Command) => {
      await ctx.accounts.revokeApiKey({ workspaceId: workspaceOf(ctx, cmd), keyId });
      ctx.output.out(`revoked ${keyId}`);
    }));
}
