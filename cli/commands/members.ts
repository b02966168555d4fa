import type { Command } from "commander";
import { action, workspaceOf, type CliContext } from "../context.js";

export function memberCommands(program: Command, ctx: CliContext): void {
  const member = program.command("member").description("workspace members (the addresses broadcast tests may go to)");

  member.command("add")
    .argument("<email>")
    .action(action(ctx, async (email: string, _opts: unknown, cmd: Command) => {
      await ctx.client.addMember({ workspaceId: workspaceOf(ctx, cmd), email });
      ctx.output.out(`added ${email}`);
    }));

  member.command("list")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const res = await ctx.client.listMembers({ workspaceId: workspaceOf(ctx, cmd) });
      if (ctx.output.json) return ctx.output.out(JSON.stringify(res.emails));
      for (const e of res.emails) ctx.output.out(e);
    }));

  member.command("remove")
    .argument("<email>")
    .action(action(ctx, async (email: string, _opts: unknown, cmd: Command) => {
      await ctx.client.removeMember({ workspaceId: workspaceOf(ctx, cmd), email });
      ctx.output.out(`removed ${email}`);
    }));
}
