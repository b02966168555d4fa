import type { Command } from "commander";
import { action, parseLimit, UsageError, workspaceOf, type CliContext } from "../context.js";
import { progressBar } from "../progress.js";
import { applyImport, type ImportSummary } from "../import/apply.js";
import { checkReadable } from "../import/files.js";
import { mailchimp } from "../import/mailchimp.js";
import { postmark } from "../import/postmark.js";
import { ImportFileError, type Importer, type ImportRecord } from "../import/records.js";
import { resend } from "../import/resend.js";
import { sendgrid } from "../import/sendgrid.js";
import { connectTarget } from "../import/target.js";

const IMPORTERS: Record<string, Importer> = { postmark, sendgrid, mailchimp, resend };
const REJECTED_SHOWN = 100;

/** The records, with every contact also put in the --group groups. */
async function* withGroups(records: AsyncIterable<ImportRecord>, groups: string[]): AsyncGenerator<ImportRecord> {
  for await (const r of records) {
    if (r.kind === "contact" && groups.length) r.groups.push(...groups.filter((g) => !r.groups.includes(g)));
    yield r;
  }
}

/** Reads every file once without writing: a file this importer cannot read stops the import before anything changes. */
async function countRows(importer: Importer, files: string[]): Promise<number> {
  let rows = 0;
  let last = "";
  for await (const r of importer.read(files)) {
    const key = `${r.file}\n${r.line}`;
    if (key !== last) rows++;
    last = key;
  }
  return rows;
}

function report(summary: ImportSummary, files: string[]): string[] {
  const dry = summary.dryRun;
  const s = summary;
  const lines = [
    dry ? "dry run: nothing was changed; the import would give:" : "imported:",
    `  rows:         ${s.rows} read from ${files.length} file${files.length === 1 ? "" : "s"}`,
    `  contacts:     ${s.contacts.created} ${dry ? "to create" : "created"}, ${s.contacts.updated} ${dry ? "to update" : "updated"}, ${s.contacts.unchanged} unchanged` +
      (dry ? "" : `, ${s.contacts.rejected} rejected`),
    `  suppressed:   ${s.suppressions.created} ${dry ? "to add" : "added"}, ${s.suppressions.existing} already suppressed` + (dry ? "" : `, ${s.suppressions.rejected} rejected`),
    `  groups:       ${s.groups.created.length} ${dry ? "to create" : "created"}${s.groups.created.length ? ` (${s.groups.created.join(", ")})` : ""}, ` +
      `${s.groups.memberships} membership${s.groups.memberships === 1 ? "" : "s"} ${dry ? "to add" : "added"}`,
    `  properties:   ${s.properties.created.length} ${dry ? "to create" : "created"}${s.properties.created.length ? ` (${s.properties.created.join(", ")})` : ""}`,
  ];
  const skipped = Object.entries(s.skipped);
  if (skipped.length) {
    lines.push(`  not carried over: ${skipped.reduce((n, [, c]) => n + c, 0)} rows`);
    for (const [reason, count] of skipped) lines.push(`    ${count} × ${reason}`);
  }
  lines.push(`  rejected:     ${s.rejectedCount} rows`);
  for (const r of s.rejected.slice(0, REJECTED_SHOWN)) lines.push(`    ${r.file} line ${r.line}${r.email ? ` (${r.email})` : ""}: ${r.reason}`);
  if (s.rejectedCount > REJECTED_SHOWN) lines.push(`    … and ${s.rejectedCount - REJECTED_SHOWN} more (--json lists the first ${s.rejected.length})`);
  return lines;
}

export function importCommands(program: Command, ctx: CliContext): void {
  program.command("import")
    .description("switch from another provider: import its export files (contacts, groups, suppressions); see docs/switching-to-mailroom.md")
    .argument("<provider>", Object.keys(IMPORTERS).join(" | "))
    .argument("<files...>", "the provider's export files (CSV, JSON, or Mailchimp's zip)")
    .option("--dry-run", "read everything and print what would change, changing nothing")
    .option("--group <name...>", "also put every imported contact in this group (created when missing)")
    .option("--batch-size <n>", "contacts per request (1-1000)", "500")
    .action(action(ctx, async (provider: string, files: string[], opts: { dryRun?: boolean; group?: string[]; batchSize: string }, cmd: Command) => {
      const importer = IMPORTERS[provider.toLowerCase()];
      if (!importer) throw new UsageError(`unknown provider "${provider}"; use ${Object.keys(IMPORTERS).join(", ")}`);
      const workspaceId = workspaceOf(ctx, cmd);
      const batchSize = parseLimit(opts.batchSize, "--batch-size");
      let total: number;
      try {
        for (const file of files) await checkReadable(file);
        total = await countRows(importer, files);
      } catch (err) {
        if (err instanceof ImportFileError) throw new UsageError(`nothing imported: ${err.message}`);
        throw err;
      }
      const label = `${importer.name} import: ${files.map((f) => f.split(/[\\/]/).pop()).join(", ")}`.slice(0, 500);
      const target = connectTarget(ctx.contacts, ctx.groups, workspaceId, label);
      const bar = progressBar(ctx.interactive, `${opts.dryRun ? "checking" : "importing"} |{bar}| {percentage}% | {value}/{total} rows`);
      bar?.start(total, 0);
      let summary: ImportSummary;
      try {
        summary = await applyImport({
          records: withGroups(importer.read(files), opts.group ?? []),
          target,
          dryRun: opts.dryRun,
          batchSize,
          onProgress: (rows) => bar?.update(rows),
        });
      } catch (err) {
        // The files were read once already; a file changing under us is the only way here.
        if (err instanceof ImportFileError) throw new UsageError(`import stopped: ${err.message} (what came before was imported; running it again is safe)`);
        throw err;
      } finally {
        bar?.stop();
      }
      if (ctx.output.json) ctx.output.out(JSON.stringify(summary, null, 2));
      else for (const line of report(summary, files)) ctx.output.out(line);
      if (summary.rejectedCount) ctx.exitCode = 2;
    }));
}
