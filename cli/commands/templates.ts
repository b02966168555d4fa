import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { CreateTemplateResponseSchema, GetTemplateResponseSchema, ListTemplatesResponseSchema } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { action, printJson, UsageError, workspaceOf, type CliContext } from "../context.js";
import { table, when } from "../output.js";

interface TemplateOpts { name: string; subject: string; html?: string; htmlFile?: string; text?: string; textFile?: string; previewText?: string }

async function templateInput(opts: TemplateOpts) {
  if (!opts.html === !opts.htmlFile) throw new UsageError("give the HTML with exactly one of --html-file <path> or --html <html>");
  return {
    name: opts.name,
    subject: opts.subject,
    html: opts.htmlFile ? await readFile(opts.htmlFile, "utf8") : opts.html!,
    text: opts.textFile ? await readFile(opts.textFile, "utf8") : (opts.text ?? ""),
    previewText: opts.previewText ?? "",
  };
}

const withContentOptions = (cmd: Command) =>
  cmd.requiredOption("--name <name>", "template name (unique in the workspace)")
    .requiredOption("--subject <subject>", "subject line; may use {{variables}}")
    .option("--html-file <path>", "file holding the HTML body")
    .option("--html <html>", "the HTML body inline")
    .option("--text-file <path>", "plain-text version")
    .option("--text <text>", "plain-text version inline")
    .option("--preview-text <text>", "inbox preview text");

export function templateCommands(program: Command, ctx: CliContext): void {
  const template = program.command("template").description("stored email templates");

  withContentOptions(template.command("create").description("create a template from a file"))
    .action(action(ctx, async (opts: TemplateOpts, cmd: Command) => {
      const res = await ctx.templates.createTemplate({ workspaceId: workspaceOf(ctx, cmd), template: await templateInput(opts) });
      if (ctx.output.json) return printJson(ctx, CreateTemplateResponseSchema, res);
      ctx.output.out(`created template ${res.template!.name} (variables: ${res.template!.variables.join(", ") || "none"})`);
    }));

  withContentOptions(template.command("update").description("replace a template's content"))
    .action(action(ctx, async (opts: TemplateOpts, cmd: Command) => {
      const res = await ctx.templates.updateTemplate({ workspaceId: workspaceOf(ctx, cmd), template: await templateInput(opts) });
      ctx.output.out(`updated template ${res.template!.name}`);
    }));

  template.command("list")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const workspaceId = workspaceOf(ctx, cmd);
      const rows: string[][] = [["NAME", "SUBJECT", "VARIABLES", "UPDATED"]];
      let cursor = "";
      for (;;) {
        const res = await ctx.templates.listTemplates({ workspaceId, page: { limit: 100, cursor } });
        if (ctx.output.json) printJson(ctx, ListTemplatesResponseSchema, res);
        rows.push(...res.templates.map((t) => [t.name, t.subject, t.variables.join(",") || "-", when(t.updatedAt)]));
        if (!res.page?.hasMore) break;
        cursor = res.page.nextCursor;
      }
      if (!ctx.output.json) ctx.output.out(table(rows));
    }));

  template.command("get")
    .argument("<name>")
    .action(action(ctx, async (name: string, _opts: unknown, cmd: Command) => {
      const res = await ctx.templates.getTemplate({ workspaceId: workspaceOf(ctx, cmd), name });
      if (ctx.output.json) return printJson(ctx, GetTemplateResponseSchema, res);
      const t = res.template!;
      ctx.output.out(table([["name", t.name], ["subject", t.subject], ["previewText", t.previewText || "-"], ["variables", t.variables.join(", ") || "-"], ["updated", when(t.updatedAt)]]));
      ctx.output.out("");
      ctx.output.out(t.html);
    }));

  template.command("delete")
    .argument("<name>")
    .action(action(ctx, async (name: string, _opts: unknown, cmd: Command) => {
      await ctx.templates.deleteTemplate({ workspaceId: workspaceOf(ctx, cmd), name });
      ctx.output.out(`deleted template ${name}`);
    }));
}
