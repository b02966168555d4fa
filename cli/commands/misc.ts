import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { action, workspaceOf, type CliContext } from "../context.js";

export function miscCommands(program: Command, ctx: CliContext): void {
  program.command("usage")
    .description("this month's sending usage against the limit")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.getUsage({ workspaceId: workspaceOf(ctx, cmd) });
      if (ctx.output.json) return ctx.output.out(JSON.stringify({ used: Number(res.used), limit: Number(res.limit), period: res.period }));
      ctx.output.out(`${res.period}: ${res.used} of ${res.limit} emails used`);
    }));

  program.command("bootstrap")
    .description("load a MAILROOM_BOOTSTRAP JSON file (idempotent)")
    .argument("<file>")
    .action(action(ctx, async (file: string) => {
      const res = await ctx.accounts.loadBootstrap({ json: await readFile(file, "utf8") });
      ctx.output.out(`loaded workspaces: ${res.workspaceIds.join(", ")}`);
    }));
}
