/**
 * The Suppressions page (DESIGN §10.3): every address and whole domain that gets no mail from
 * the workspace, searched and filtered by reason; add an address or a domain; remove one (a spam
 * complaint only with a confirmation: the recipient said this mail is spam); import a CSV with a
 * preview of its first rows and a column mapping; export the list as CSV.
 *
 *   GET  /suppressions?search=&reason=&cursor=
 *   POST /suppressions                    add an address or a domain (reason: added by hand)
 *   POST /suppressions/remove             lift one (`force` confirms a complaint)
 *   GET  /suppressions/export?reason=     the list as CSV (the columns POST /v1/suppressions/import reads)
 *   GET  /suppressions/import             upload form
 *   POST /suppressions/import             keeps the upload, 303 to its preview
 *   GET  /suppressions/import/:upload     the first rows and a mapping of each column
 *   POST /suppressions/import/:upload     imports with that mapping; the report of what it did
 *
 * Adding is checked with the schema of POST /v1/suppressions; the markup is views/suppressions.ts.
 */
import { Readable, pipeline } from "node:stream";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { FastifyInstance } from "fastify";
import { parse, CsvError } from "csv-parse";
import { stringify } from "csv-stringify";
import { SuppressionEntryOutcome, SuppressionReason, type SuppressionEntrySchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { REASON_TO_PB, createSuppressionSchema } from "@mailroom/http/suppressions-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { chosenMapping, previewCsv, uploadedFile, Uploads, type MappingTarget } from "../csv-mapping.js";
import { editable, html, parseWith, str } from "../form-values.js";
import { render } from "../views/html.js";
import {
  SUPPRESSION_REASONS, reasonOf, suppressionImportView, suppressionListView, suppressionMappingView, suppressionReportView, type SuppressionImportReport,
} from "../views/suppressions.js";


const reasonNamed = (name: string) => SUPPRESSION_REASONS.find((r) => r.name === name);

/** Spellings other exports use for the reasons, so a reason column maps without editing the file. */
const REASON_ALIASES: Record<string, string> = {
  bounce: "hard_bounce", bounced: "hard_bounce", hardbounce: "hard_bounce", hard_bounce: "hard_bounce", invalid: "hard_bounce",
  complaint: "complaint", complained: "complaint", spam: "complaint", spamcomplaint: "complaint", spam_complaint: "complaint", spam_report: "complaint",
  unsubscribe: "unsubscribed", unsubscribed: "unsubscribed", manual: "manual", manualsuppression: "manual", imported: "imported",
};

const MAPPING_TARGETS: MappingTarget[] = [
  { value: "address", label: "Email address or domain" },
  { value: "email", label: "Email address" },
  { value: "domain", label: "Domain" },
  { value: "reason", label: "Reason" },
  { value: "created_at", label: "Suppressed at (date)" },
  { value: "source", label: "Source" },
];
const ALLOWED = new Set(MAPPING_TARGETS.map((t) => t.value));

/** What a header most likely is ("" leaves it out). */
function guessColumn(header: string): string {
  const h = header.trim().toLowerCase().replace(/[\s_-]+/g, "");
  if (["email", "emailaddress", "address", "recipient", "to", "e-mail"].includes(h)) return "email";
  if (h === "domain") return "domain";
  if (["reason", "suppressionreason", "type"].includes(h)) return "reason";
  if (["createdat", "created", "date", "suppressedat", "bouncedat"].includes(h)) return "created_at";
  if (h === "source") return "source";
  return "";
}

const IMPORT_BATCH = 1_000;
const REJECTED_SHOWN = 100;
const DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function formError(err: unknown): Flash {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  return { kind: "error", message: body.message };
}

/** "ann@example.com" (anything with an @ inside) → an address; "example.com" or "@example.com" → a domain. */
const targetOf = (text: string): { email?: string; domain?: string } => (!text.startsWith("@") && text.includes("@") ? { email: text } : { domain: text.replace(/^@/, "") });

export function registerSuppressionPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const contacts = () => deps.clients.contacts;
  const uploads = new Uploads();

  scope.get("/suppressions", async (request, reply) => {
    const session = sessionOf(request);
    const search = str(request.query, "search").trim().slice(0, 200);
    const reasonName = str(request.query, "reason");
    const reason = reasonNamed(reasonName);
    const cursor = str(request.query, "cursor");
    const res = await contacts().listSuppressions(
      { workspaceId: session.workspaceId, search, reason: reason?.value ?? SuppressionReason.UNSPECIFIED, page: { limit: 50, cursor } },
      rpcOptions(request),
    );
    const body = suppressionListView({
      suppressions: res.suppressions, search, reason: reason?.name, nextCursor: res.page?.hasMore ? res.page.nextCursor : undefined,
      canEdit: session.canEdit, csrf: csrfField(session),
    });
    return html(reply, consolePage({ title: "Suppressions", session, active: "suppressions", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post("/suppressions", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const target = str(request.body, "target").trim();
    const detail = str(request.body, "detail").trim().slice(0, 200);
    // The request POST /v1/suppressions takes; the note is the console's own (the list's Detail).
    const parsed = parseWith(createSuppressionSchema, { ...targetOf(target), reason: "manual", source: "console" });
    if (!parsed.ok) {
      setFlash(reply, parsed.flash);
      return seeOther(reply, consoleUrl("/suppressions"));
    }
    const { email = "", domain = "", reason = "manual", source = "" } = parsed.data;
    try {
      const { created } = await contacts().addSuppression(
        { workspaceId: session.workspaceId, email, domain, reason: REASON_TO_PB[reason], detail: detail || "added in the console", source },
        rpcOptions(request),
      );
      const what = email ? `${target} is suppressed: it gets` : `Every address at ${target.replace(/^@/, "")} is suppressed: they get`;
      setFlash(reply, { kind: "ok", message: created ? `${what} no email from this workspace.` : `${target} was suppressed already.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, consoleUrl("/suppressions"));
  });

  scope.post("/suppressions/remove", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const target = str(request.body, "target").trim();
    const force = str(request.body, "force") === "yes";
    try {
      await contacts().removeSuppression({ workspaceId: session.workspaceId, ...targetOf(target), force, requireFound: true }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${target} is no longer suppressed.` });
    } catch (err) {
      const flash = formError(err);
      if (bodyFromError(err).code === "force_required") {
        flash.message = `${target} reported this workspace's mail as spam. To send to it again, tick the confirmation beside Remove.`;
      }
      setFlash(reply, flash);
    }
    return seeOther(reply, consoleUrl("/suppressions", { search: target.replace(/^@/, "") }));
  });

  scope.get("/suppressions/export", async (request, reply) => {
    const session = sessionOf(request);
    const reason = reasonNamed(str(request.query, "reason"));
    const stream = contacts().exportSuppressions(
      { workspaceId: session.workspaceId, reason: reason?.value ?? SuppressionReason.UNSPECIFIED, batchSize: 2_000 },
      { ...rpcOptions(request), timeoutMs: 60 * 60_000 },
    );
    const iterator = stream[Symbol.asyncIterator]();
    // The first batch before a byte is sent: a refusal is still an error page.
    const first = await iterator.next();
    async function* rows() {
      try {
        yield ["email", "domain", "reason", "created_at", "source"];
        for (let next = first; !next.done; next = await iterator.next()) {
          for (const s of next.value.suppressions) {
            yield [s.domain ? "" : s.email, s.domain, reasonOf(s.reason)?.name ?? "manual", s.createdAt ? timestampDate(s.createdAt).toISOString() : "", s.source];
          }
        }
      } finally {
        await iterator.return?.();
      }
    }
    const csv = stringify({ escape_formulas: true });
    pipeline(Readable.from(rows()), csv, (err) => {
      if (err && !reply.raw.destroyed) request.log.warn({ err }, "console suppressions export ended early");
    });
    return reply.type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="suppressions-${new Date().toISOString().slice(0, 10)}.csv"`)
      .send(csv);
  });

  scope.get("/suppressions/import", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const body = suppressionImportView(csrfField(session));
    return html(reply, consolePage({ title: "Import suppressions", session, active: "suppressions", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post("/suppressions/import", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const file = uploadedFile(request.body);
    if (!file) {
      setFlash(reply, { kind: "error", message: "Choose a CSV file to import (it was missing or empty)." });
      return seeOther(reply, consoleUrl("/suppressions/import"));
    }
    try {
      previewCsv(file);
    } catch (err) {
      setFlash(reply, formError(err));
      return seeOther(reply, consoleUrl("/suppressions/import"));
    }
    const upload = uploads.put(session.workspaceId, file);
    return seeOther(reply, consoleUrl(`/suppressions/import/${upload.id}`));
  });


  scope.get<{ Params: { upload: string } }>("/suppressions/import/:upload", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const upload = uploads.require(session.workspaceId, request.params.upload);
    const preview = previewCsv(upload.file);
    const body = suppressionMappingView({ uploadId: upload.id, preview, targets: MAPPING_TARGETS, guess: guessColumn, csrf: csrfField(session) });
    return html(reply, consolePage({ title: "Import suppressions", session, active: "suppressions", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post<{ Params: { upload: string } }>("/suppressions/import/:upload", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const upload = uploads.require(session.workspaceId, request.params.upload);
    const preview = previewCsv(upload.file);
    const mapping = chosenMapping(request.body, preview.header.length, ALLOWED);
    const defaultReason = reasonNamed(str(request.body, "defaultReason")) ?? reasonNamed("imported")!;
    if (!mapping.some((m) => m === "address" || m === "email" || m === "domain")) {
      setFlash(reply, { kind: "error", message: "Choose the column that holds the email address or domain." });
      return seeOther(reply, consoleUrl(`/suppressions/import/${upload.id}`));
    }
    const column = (name: string) => mapping.indexOf(name);
    const report: SuppressionImportReport = { rows: 0, created: 0, existing: 0, rejected: [], rejectedCount: 0 };
    const reject = (line: number, value: string, reason: string) => {
      report.rejectedCount++;
      if (report.rejected.length < REJECTED_SHOWN) report.rejected.push({ line, value, reason });
    };
    let batch: Array<{ line: number; value: string; entry: MessageInitShape<typeof SuppressionEntrySchema> }> = [];
    const label = "console import";
    const flush = async () => {
      if (!batch.length) return;
      const sent = batch;
      batch = [];
      const res = await contacts().addSuppressions({ workspaceId: session.workspaceId, entries: sent.map((b) => b.entry), label }, rpcOptions(request));
      res.results.forEach((r, i) => {
        if (r.outcome === SuppressionEntryOutcome.CREATED) report.created++;
        else if (r.outcome === SuppressionEntryOutcome.EXISTING) report.existing++;
        else reject(sent[i].line, sent[i].value, r.errorMessage || r.errorCode || "refused");
      });
    };
    const parser = Readable.from([upload.file]).pipe(parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true, from_line: 2, max_record_size: 64 * 1024 }));
    try {
      for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
        report.rows++;
        const cell = (name: string) => (column(name) >= 0 ? (record[column(name)] ?? "").trim() : "");
        const address = cell("address");
        const email = cell("email") || (address && targetOf(address).email) || "";
        const domain = cell("domain") || (address && targetOf(address).domain) || "";
        const value = email || domain;
        if (!value) {
          reject(info.lines, "", "no address or domain in this row");
          continue;
        }
        const reasonText = cell("reason").toLowerCase().replace(/[\s-]+/g, "_");
        const reason = reasonText ? reasonNamed(REASON_ALIASES[reasonText] ?? REASON_ALIASES[reasonText.replace(/_/g, "")] ?? "") : defaultReason;
        if (!reason) {
          reject(info.lines, value, `reason "${reasonText.slice(0, 40)}" is not one of hard_bounce, complaint, unsubscribed, manual, imported`);
          continue;
        }
        const createdText = cell("created_at");
        const createdAt = createdText && DATE.test(createdText) ? new Date(createdText) : undefined;
        if (createdText && (!createdAt || Number.isNaN(createdAt.getTime()))) {
          reject(info.lines, value, `"${createdText.slice(0, 40)}" is not a date (ISO 8601, e.g. 2025-03-01)`);
          continue;
        }
        batch.push({
          line: info.lines, value,
          entry: { email, domain: email ? "" : domain, reason: reason.value, source: cell("source").slice(0, 500) || "console import", createdAt: createdAt ? timestampFromDate(createdAt) : undefined },
        });
        if (batch.length >= IMPORT_BATCH) await flush();
      }
      await flush();
    } catch (err) {
      if (!(err instanceof CsvError)) throw err;
      setFlash(reply, { kind: "error", message: `The file is not valid CSV (${err.message}); ${report.created + report.existing} rows before it were imported (importing again is safe).` });
      return seeOther(reply, consoleUrl("/suppressions/import"));
    }
    uploads.delete(session.workspaceId, upload.id);
    return html(reply, consolePage({ title: "Suppressions imported", session, active: "suppressions", body: render(suppressionReportView(report)) }));
  });
}
