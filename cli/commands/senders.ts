import type { Command } from "commander";
import { AddDomainResponseSchema, GetDomainResponseSchema, ListSendersResponseSchema, VerifyDomainResponseSchema, type Domain } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { action, printJson, workspaceOf, type CliContext } from "../context.js";
import { table, when } from "../output.js";

function printRecords(ctx: CliContext, d: Domain): void {
  ctx.output.out(`${d.domain}: ${d.verified ? `verified ${when(d.verifiedAt)}` : "not verified"}`);
  if (d.verificationError) ctx.output.out(`last check: ${d.verificationError}`);
  ctx.output.out("");
  ctx.output.out("Publish these DNS records (DKIM is required; SPF and DMARC are recommended):");
  for (const r of d.records) {
    ctx.output.out("");
    ctx.output.out(`  ${r.purpose.toUpperCase()} ${r.type} ${r.verified ? "(found)" : ""}`.trimEnd());
    ctx.output.out(`    name:  ${r.name}`);
    ctx.output.out(`    value: ${r.value}`);
  }
}

export function senderCommands(program: Command, ctx: CliContext): void {
  const domain = program.command("domain").description("sending domains: DKIM keys and DNS verification");

  domain.command("add")
    .description("add a domain, generate its DKIM key and print the DNS records to publish")
    .argument("<domain>")
    .action(action(ctx, async (name: string, _opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.addDomain({ workspaceId: workspaceOf(ctx, cmd), domain: name });
      if (ctx.output.json) return printJson(ctx, AddDomainResponseSchema, res);
      printRecords(ctx, res.domain!);
      ctx.output.out("");
      ctx.output.out(`Then run: mailroom domain verify ${res.domain!.domain}`);
    }));

  domain.command("records")
    .description("print a domain's DNS records and what the last check found")
    .argument("<domain>")
    .action(action(ctx, async (name: string, _opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.getDomain({ workspaceId: workspaceOf(ctx, cmd), domain: name });
      if (ctx.output.json) return printJson(ctx, GetDomainResponseSchema, res);
      printRecords(ctx, res.domain!);
    }));

  domain.command("verify")
    .description("look the records up in DNS and mark the domain verified when the DKIM key matches")
    .argument("<domain>")
    .action(action(ctx, async (name: string, _opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.verifyDomain({ workspaceId: workspaceOf(ctx, cmd), domain: name });
      if (ctx.output.json) return printJson(ctx, VerifyDomainResponseSchema, res);
      const d = res.domain!;
      ctx.output.out(d.verified ? `${d.domain} is verified` : `${d.domain} is not verified yet: ${d.verificationError}`);
      for (const r of d.records) ctx.output.out(`  ${r.purpose.padEnd(5)} ${r.verified ? "found" : "missing"}  ${r.name}`);
      if (!d.verified) ctx.exitCode = 2;
    }));

  domain.command("mark-verified")
    .description("mark a domain verified without DNS (development)")
    .argument("<domain>")
    .action(action(ctx, async (name: string, _opts: unknown, cmd: Command) => {
      await ctx.accounts.markVerified({ workspaceId: workspaceOf(ctx, cmd), target: { case: "domain", value: name } });
      ctx.output.out(`${name} marked verified`);
    }));

  domain.command("list")
    .description("list domains")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.listSenders({ workspaceId: workspaceOf(ctx, cmd) });
      if (ctx.output.json) return printJson(ctx, ListSendersResponseSchema, res);
      ctx.output.out(table([["DOMAIN", "VERIFIED", "SELECTOR"], ...res.domains.map((d) => [d.domain, d.verified ? "yes" : "no", d.dkimSelector])]));
    }));

  const sender = program.command("sender").description("verified sender addresses");

  sender.command("add")
    .description("add a sender address (pending unless --verified)")
    .argument("<email>")
    .option("--verified", "mark it verified at once (admin)")
    .action(action(ctx, async (email: string, opts: { verified?: boolean }, cmd: Command) => {
      const res = await ctx.accounts.addVerifiedEmail({ workspaceId: workspaceOf(ctx, cmd), email, verified: opts.verified ?? false });
      ctx.output.out(`${res.email} ${res.verified ? "verified" : "pending verification"}`);
    }));

  sender.command("mark-verified")
    .description("mark an address verified without a confirmation mail (development)")
    .argument("<email>")
    .action(action(ctx, async (email: string, _opts: unknown, cmd: Command) => {
      await ctx.accounts.markVerified({ workspaceId: workspaceOf(ctx, cmd), target: { case: "email", value: email } });
      ctx.output.out(`${email} marked verified`);
    }));

  sender.command("list")
    .description("list sender addresses and domains")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.listSenders({ workspaceId: workspaceOf(ctx, cmd) });
      if (ctx.output.json) return printJson(ctx, ListSendersResponseSchema, res);
      ctx.output.out(table([["SENDER", "KIND", "VERIFIED"],
        ...res.emails.map((e) => [e.email, "address", e.verified ? "yes" : "no"]),
        ...res.domains.map((d) => [d.domain, "domain", d.verified ? "yes" : "no"])]));
    }));

  sender.command("check")
    .description("would this From be allowed?")
    .argument("<from>", 'address or "Name <address>"')
    .action(action(ctx, async (from: string, _opts: unknown, cmd: Command) => {
      const res = await ctx.accounts.checkSender({ workspaceId: workspaceOf(ctx, cmd), from });
      if (res.allowed) ctx.output.out(`allowed: ${res.address}${res.dkim ? ` (DKIM ${res.dkim.selector}._domainkey.${res.dkim.domain})` : ""}`);
      else {
        ctx.output.out(`not allowed: ${res.address}`);
        ctx.output.out(`allowed emails: ${res.allowedEmails.join(", ") || "-"}`);
        ctx.output.out(`allowed domains: ${res.allowedDomains.join(", ") || "-"}`);
        ctx.exitCode = 2;
      }
    }));
}
