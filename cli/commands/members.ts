import type { Command } from "commander";
import { loadConfig } from "@mailroom/kit";
import { InviteMemberResponseSchema, ListSessionsResponseSchema, TeamServiceListMembersResponseSchema, UpdateMemberRoleResponseSchema } from "@mailroom/proto/accounts/v1/team_pb.js";
import { cliUser } from "../client.js";
import { action, printJson, UsageError, workspaceOf, type CliContext } from "../context.js";
import { table, when } from "../output.js";

const ROLES = ["OWNER", "ADMIN", "EDITOR", "VIEWER"];

function roleArg(raw: string): string {
  const role = raw.trim().toUpperCase();
  if (!ROLES.includes(role)) throw new UsageError(`role must be one of ${ROLES.join(", ")}, got "${raw}"`);
  return role;
}

/** The workspace from a positional argument, or -w / MAILROOM_WORKSPACE. */
const workspaceArg = (ctx: CliContext, cmd: Command, positional?: string) => positional || workspaceOf(ctx, cmd);

export function memberCommands(program: Command, ctx: CliContext): void {
  const member = program.command("member").description("workspace members: console users with a role (OWNER, ADMIN, EDITOR, VIEWER); also the addresses broadcast tests may go to");

  member.command("add")
    .description("add an active member at once (no invitation); the workspace's first member is its OWNER")
    .argument("<email>")
    .option("--role <role>", "OWNER, ADMIN, EDITOR or VIEWER (default: EDITOR, OWNER for the first member)")
    .action(action(ctx, async (email: string, opts: { role?: string }, cmd: Command) => {
      const workspaceId = workspaceOf(ctx, cmd);
      if (!opts.role) {
        await ctx.accounts.addMember({ workspaceId, email });
        return ctx.output.out(`added ${email}`);
      }
      // With a role: invite and accept at once, so the role is the one asked for.
      const invited = await ctx.team.inviteMember({ workspaceId, email, role: roleArg(opts.role), invitedBy: `cli:${cliUser(ctx.env)}` });
      await ctx.team.acceptInvitation({ token: invited.token });
      ctx.output.out(`added ${email} (${roleArg(opts.role)})`);
    }));

  member.command("invite")
    .description("invite someone by email: prints the invitation link (single use, valid 72 hours)")
    .argument("<workspace>")
    .argument("<email>")
    .option("--role <role>", "OWNER, ADMIN, EDITOR or VIEWER", "EDITOR")
    .action(action(ctx, async (workspaceId: string, email: string, opts: { role: string }) => {
      const res = await ctx.team.inviteMember({ workspaceId, email, role: roleArg(opts.role), invitedBy: `cli:${cliUser(ctx.env)}` });
      if (ctx.output.json) return printJson(ctx, InviteMemberResponseSchema, res);
      ctx.output.out(`${loadConfig(ctx.env).publicUrl}/console/invite/${res.token}`);
      ctx.output.err(`invited ${res.member!.email} as ${res.member!.role} (member ${res.member!.id}); the link works once, until ${when(res.expiresAt)}`);
    }));

  member.command("list")
    .description("the workspace's members with their role and status")
    .argument("[workspace]", "default: -w / $MAILROOM_WORKSPACE")
    .action(action(ctx, async (workspace: string | undefined, _opts: unknown, cmd: Command) => {
      const res = await ctx.team.listMembers({ workspaceId: workspaceArg(ctx, cmd, workspace) });
      if (ctx.output.json) return printJson(ctx, TeamServiceListMembersResponseSchema, res);
      ctx.output.out(table([["ID", "EMAIL", "ROLE", "STATUS", "LAST SIGN-IN"], ...res.members.map((m) => [
        m.id, m.email, m.role, m.status, when(m.lastSignInAt) || "-",
      ])]));
    }));

  member.command("role")
    .description("change a member's role (a workspace keeps at least one OWNER)")
    .argument("<workspace>")
    .argument("<member>", "mbr_… id or email")
    .argument("<role>", "OWNER, ADMIN, EDITOR or VIEWER")
    .action(action(ctx, async (workspaceId: string, memberRef: string, role: string) => {
      const res = await ctx.team.updateMemberRole({ workspaceId, memberId: memberRef, role: roleArg(role) });
      if (ctx.output.json) return printJson(ctx, UpdateMemberRoleResponseSchema, res);
      ctx.output.out(`${res.member!.email} is now ${res.member!.role}`);
    }));

  member.command("remove")
    .description("remove a member: signs it out everywhere at once; keys it owns stop working")
    .argument("<workspace-or-member>", "with one argument: the member's email (workspace from -w)")
    .argument("[member]", "mbr_… id or email")
    .action(action(ctx, async (first: string, second: string | undefined, _opts: unknown, cmd: Command) => {
      if (second === undefined) {
        await ctx.accounts.removeMember({ workspaceId: workspaceOf(ctx, cmd), email: first });
        return ctx.output.out(`removed ${first}`);
      }
      await ctx.team.removeTeamMember({ workspaceId: first, memberId: second });
      ctx.output.out(`removed ${second}`);
    }));

  member.command("sessions")
    .description("a member's console sessions")
    .argument("<workspace>")
    .argument("<member>", "mbr_… id or email")
    .action(action(ctx, async (workspaceId: string, memberRef: string) => {
      const res = await ctx.team.listSessions({ workspaceId, memberId: memberRef });
      if (ctx.output.json) return printJson(ctx, ListSessionsResponseSchema, res);
      ctx.output.out(table([["ID", "METHOD", "CREATED", "LAST SEEN", "IP", "USER AGENT"], ...res.sessions.map((s) => [
        s.id, s.method, when(s.createdAt), when(s.lastSeenAt), s.ip || "-", s.userAgent || "-",
      ])]));
    }));

  member.command("sign-out")
    .description("sign a member out everywhere (revokes every session)")
    .argument("<workspace>")
    .argument("<member>", "mbr_… id or email")
    .action(action(ctx, async (workspaceId: string, memberRef: string) => {
      const res = await ctx.team.revokeAllSessions({ workspaceId, memberId: memberRef });
      ctx.output.out(`revoked ${res.revoked} session(s) of ${memberRef}`);
    }));
}
