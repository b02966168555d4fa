import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Command } from "commander";
import { CreateContactResponseSchema, GetContactResponseSchema, ListContactPropertiesResponseSchema, ListContactsResponseSchema, ListSuppressionsResponseSchema, PropertyType, SuppressionReason, ContactSource, ContactStatus, type Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { action, parseLimit, printJson, UsageError, workspaceOf, type CliContext } from "../context.js";
import { DEFAULT_BATCH_SIZE, importContactsCsv, ImportAbortedError } from "@mailroom/kit/contacts-csv/import-csv.js";
import { table, when } from "../output.js";
import { progressBar } from "../progress.js";

const TYPE_BY_NAME: Record<string, PropertyType> = {
  string: PropertyType.STRING, number: PropertyType.NUMBER, boolean: PropertyType.BOOLEAN, date: PropertyType.DATE,
  select: PropertyType.SELECT, multi_select: PropertyType.MULTI_SELECT,
};
const STATUS_NAMES = ["SUBSCRIBED", "UNSUBSCRIBED", "ARCHIVED", "OPT_IN_PENDING", "BANNED"] as const;
function parseStatus(raw: string): ContactStatus {
  const name = raw.trim().toUpperCase();
  if (!(STATUS_NAMES as readonly string[]).includes(name)) throw new UsageError(`unknown status "${raw}"; use ${STATUS_NAMES.join(", ")}`);
  return ContactStatus[name as (typeof STATUS_NAMES)[number]];
}
const statusName = (c: Contact) => ContactStatus[c.status] ?? "SUBSCRIBED";
const TYPE_NAME = (t: PropertyType) => (PropertyType[t] ?? "unknown").toLowerCase();
const REASONS: Record<string, SuppressionReason> = {
  unsubscribed: SuppressionReason.UNSUBSCRIBED, hard_bounce: SuppressionReason.HARD_BOUNCE,
  complaint: SuppressionReason.COMPLAINT, manual: SuppressionReason.MANUAL, imported: SuppressionReason.IMPORTED,
};
const MAX_REJECTED_SHOWN = 100;

const contactRow = (c: Contact) => [c.email, c.firstName || "-", c.lastName || "-", statusName(c), c.timezone || "-", JSON.stringify(c.properties ?? {})];
const CONTACT_HEADER = ["EMAIL", "FIRST", "LAST", "STATUS", "TIMEZONE", "PROPERTIES"];

export function contactCommands(program: Command, ctx: CliContext): void {
  const property = program.command("property").description("custom contact properties (merge variables)");

  property.command("create")
    .argument("<slug>", "API name, e.g. plan")
    .argument("<type>", "string | number | boolean | date | select | multi_select")
    .option("--options <list>", "select / multi_select: comma-separated option values")
    .option("--display-name <name>", "shown name (default: the slug)")
    .action(action(ctx, async (slug: string, type: string, opts: { options?: string; displayName?: string }, cmd: Command) => {
      const t = TYPE_BY_NAME[type.toLowerCase()];
      if (t === undefined) throw new UsageError(`unknown property type "${type}"; use string, number, boolean, date, select or multi_select`);
      const options = (opts.options ?? "").split(",").map((s) => s.trim()).filter(Boolean);
      await ctx.contacts.createContactProperty({ workspaceId: workspaceOf(ctx, cmd), slug, type: t, options, displayName: opts.displayName ?? "" });
      ctx.output.out(`created property ${slug} (${type.toLowerCase()})`);
    }));

  property.command("list")
    .action(action(ctx, async (_opts: unknown, cmd: Command) => {
      const res = await ctx.contacts.listContactProperties({ workspaceId: workspaceOf(ctx, cmd) });
      if (ctx.output.json) return printJson(ctx, ListContactPropertiesResponseSchema, res);
      ctx.output.out(table([["SLUG", "TYPE", "BUILT-IN", "ID", "OPTIONS"], ...res.properties.map((p) => [
        p.slug, TYPE_NAME(p.type), p.builtIn ? "yes" : "no", p.builtIn ? "-" : p.id || "-", p.options.map((o) => o.value).join(",") || "-",
      ])]));
    }));

  const contact = program.command("contact").description("contacts: add, list, import from CSV");

  contact.command("add")
    .description("add a contact (409 when the email exists)")
    .argument("<email>")
    .option("--first-name <name>")
    .option("--last-name <name>")
    .option("--timezone <tz>")
    .option("--status <status>", "SUBSCRIBED (default), UNSUBSCRIBED, ARCHIVED, OPT_IN_PENDING or BANNED")
    .option("--unsubscribed", "add as UNSUBSCRIBED (same as --status UNSUBSCRIBED)")
    .option("--prop <slug=value...>", "custom property values (the audience unit converts them to the property's type)")
    .action(action(ctx, async (email: string, opts: { firstName?: string; lastName?: string; timezone?: string; status?: string; unsubscribed?: boolean; prop?: string[] }, cmd: Command) => {
      const textProperties: Record<string, string> = {};
      for (const pair of opts.prop ?? []) {
        const eq = pair.indexOf("=");
        if (eq <= 0) throw new UsageError(`--prop expects slug=value, got "${pair}"`);
        textProperties[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
      const res = await ctx.contacts.createContact({
        workspaceId: workspaceOf(ctx, cmd),
        contact: {
          email, firstName: opts.firstName, lastName: opts.lastName, timezone: opts.timezone, textProperties, source: ContactSource.DASHBOARD,
          status: opts.status ? parseStatus(opts.status) : opts.unsubscribed ? ContactStatus.UNSUBSCRIBED : undefined,
        },
      });
      if (ctx.output.json) return printJson(ctx, CreateContactResponseSchema, res);
      ctx.output.out(`created ${res.contact!.email} (${res.contact!.id})`);
    }));

  contact.command("get")
    .argument("<email>")
    .action(action(ctx, async (email: string, _opts: unknown, cmd: Command) => {
      const res = await ctx.contacts.getContact({ workspaceId: workspaceOf(ctx, cmd), email });
      if (ctx.output.json) return printJson(ctx, GetContactResponseSchema, res);
      const c = res.contact!;
      ctx.output.out(table([["id", c.id], ["email", c.email], ["firstName", c.firstName], ["lastName", c.lastName], ["timezone", c.timezone],
        ["status", statusName(c)], ["source", ContactSource[c.source] ?? "-"],
        ...(["avatarUrl", "city", "language", "phone", "birthday", "countryCode"] as const).filter((k) => c[k]).map((k) => [k, c[k]]),
        ["properties", JSON.stringify(c.properties ?? {})], ["created", when(c.createdAt)], ["updated", when(c.updatedAt)]]));
    }));

  contact.command("remove")
    .argument("<email>")
    .action(action(ctx, async (email: string, _opts: unknown, cmd: Command) => {
      await ctx.contacts.deleteContact({ workspaceId: workspaceOf(ctx, cmd), email });
      ctx.output.out(`removed ${email}`);
    }));

  contact.command("list")
    .description("list contacts one page at a time, or all of them with --all")
    .option("--limit <n>", "page size (1-500)", "50")
    .option("--cursor <cursor>", "continue after this cursor")
    .option("--all", "follow the cursor to the end")
    .option("--subscribed", "only SUBSCRIBED contacts (a broadcast audience)")
    .option("--status <status>", "only contacts with this status")
    .action(action(ctx, async (opts: { limit: string; cursor?: string; all?: boolean; subscribed?: boolean; status?: string }, cmd: Command) => {
      const status = opts.status ? parseStatus(opts.status) : ContactStatus.UNSPECIFIED;
      const workspaceId = workspaceOf(ctx, cmd);
      const limit = parseLimit(opts.limit, "--limit");
      let cursor = opts.cursor ?? "";
      let first = true;
      for (;;) {
        const res = await ctx.contacts.listContacts({ workspaceId, page: { limit, cursor }, subscribedOnly: opts.subscribed ?? false, status });
        if (ctx.output.json) printJson(ctx, ListContactsResponseSchema, res);
        else {
          const rows = res.contacts.map(contactRow);
          if (rows.length || first) ctx.output.out(table(first ? [CONTACT_HEADER, ...rows] : rows));
        }
        first = false;
        if (!res.page?.hasMore) break;
        cursor = res.page.nextCursor;
        if (!opts.all) {
          ctx.output.err(`more: --cursor ${cursor}`);
          break;
        }
      }
    }));

  contact.command("import")
    .description("import contacts from a CSV file (header row: email, firstName, lastName, timezone, status (or yes/no subscribed), <property slugs>)")
    .argument("<file>", "CSV file")
    .option("--batch-size <n>", "rows per request (1-1000)", String(DEFAULT_BATCH_SIZE))
    .action(action(ctx, async (file: string, opts: { batchSize: string }, cmd: Command) => {
      const workspaceId = workspaceOf(ctx, cmd);
      const size = (await stat(file)).size;
      const bar = progressBar(ctx.interactive, "importing |{bar}| {percentage}% | {rows} rows | {rejected} rejected");
      bar?.start(size, 0, { rows: 0, rejected: 0 });
      let summary;
      try {
        summary = await importContactsCsv({
          client: ctx.contacts,
          workspaceId,
          input: createReadStream(file),
          batchSize: parseLimit(opts.batchSize, "--batch-size"),
          onProgress: (p) => bar?.update(p.bytes, { rows: p.rows, rejected: p.rejected }),
        });
      } catch (err) {
        if (err instanceof ImportAbortedError) throw new UsageError(`import aborted, nothing imported: ${err.message}`);
        throw err;
      } finally {
        bar?.stop();
      }
      if (ctx.output.json) {
        ctx.output.out(JSON.stringify(summary, null, 2));
      } else {
        ctx.output.out(`${summary.rows} rows: ${summary.created} created, ${summary.updated} updated, ${summary.rejectedCount} rejected`);
        for (const r of summary.rejected.slice(0, MAX_REJECTED_SHOWN)) ctx.output.out(`  line ${r.line}${r.email ? ` (${r.email})` : ""}: ${r.reason}`);
        if (summary.rejectedCount > MAX_REJECTED_SHOWN) {
          ctx.output.out(`  … and ${summary.rejectedCount - MAX_REJECTED_SHOWN} more (--json lists the first ${summary.rejected.length})`);
        }
      }
      if (summary.stopped) {
        ctx.output.err(`error: import stopped at line ${summary.stopped.line}: ${summary.stopped.reason}`);
        ctx.exitCode = 1;
      } else if (summary.rejectedCount) {
        ctx.exitCode = 2;
      }
    }));

  const suppression = program.command("suppression").description("addresses no mail goes to");

  suppression.command("list")
    .option("--limit <n>", "page size", "100")
    .action(action(ctx, async (opts: { limit: string }, cmd: Command) => {
      const res = await ctx.contacts.listSuppressions({ workspaceId: workspaceOf(ctx, cmd), page: { limit: parseLimit(opts.limit, "--limit"), cursor: "" } });
      if (ctx.output.json) return printJson(ctx, ListSuppressionsResponseSchema, res);
      ctx.output.out(table([["EMAIL", "REASON", "DETAIL", "SINCE"], ...res.suppressions.map((s) => [
        s.email || `@${s.domain}`, (SuppressionReason[s.reason] ?? "").toLowerCase(), s.detail || "-", when(s.createdAt),
      ])]));
    }));

  suppression.command("add")
    .argument("<email>")
    .option("--reason <reason>", "unsubscribed | hard_bounce | complaint | manual", "manual")
    .option("--detail <text>", "why", "")
    .action(action(ctx, async (email: string, opts: { reason: string; detail: string }, cmd: Command) => {
      const reason = REASONS[opts.reason];
      if (reason === undefined) throw new UsageError(`unknown reason "${opts.reason}"; use ${Object.keys(REASONS).join(", ")}`);
      await ctx.contacts.addSuppression({ workspaceId: workspaceOf(ctx, cmd), email, reason, detail: opts.detail });
      ctx.output.out(`suppressed ${email}`);
    }));

  suppression.command("remove")
    .argument("<email>")
    .option("--force", "also lift a spam complaint's suppression")
    .action(action(ctx, async (email: string, opts: { force?: boolean }, cmd: Command) => {
      await ctx.contacts.removeSuppression({ workspaceId: workspaceOf(ctx, cmd), email, force: Boolean(opts.force) });
      ctx.output.out(`lifted suppression of ${email}`);
    }));
}
