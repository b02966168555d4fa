/**
 * Contacts pages: the list (search and status filter), one contact (properties and
 * history), CSV import as a job with a progress bar and a report of rejected rows, and the
 * suppression list with reasons.
 *
 *   GET  /contacts?search=&status=&cursor=
 *   GET  /contacts/new                    add one contact by hand (contacts-new.ts)
 *   POST /contacts                        create it (contacts-new.ts)
 *   GET  /contacts/:id?activity=          properties, history, the activity timeline (paged), webhook history, automation runs, and the edit, unsubscribe and delete forms
 *   POST /contacts/:id                    save the edit form (names, timezone, custom properties)
 *   POST /contacts/:id/unsubscribe        suppress the address as unsubscribed (as its unsubscribe link does)
 *   POST /contacts/:id/resubscribe        lift an unsubscribe (never a bounce or complaint)
 *   POST /contacts/:id/delete             delete the contact (its suppression, if any, stays)
 *   GET  /contacts/import                 upload form
 *   POST /contacts/import                 starts a job, 303 to its page (the file's own header names the columns)
 *   POST /contacts/import/preview         keeps the upload, 303 to its preview
 *   GET  /contacts/import/preview/:upload the first rows and a <select> per column (a field, a property, or left out)
 *   POST /contacts/import/preview/:upload starts the job with that mapping, 303 to its page
 *   GET  /contacts/import/:job            the job's page; JSON when asked (Accept: application/json)
 *   GET  /contacts/suppressions           302 to /suppressions (suppressions.ts), where the list is now
 *   POST /contacts/suppressions           add an address (reason: added by hand), as the older form posted it
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ContactSource, ContactStatus, PropertyType, SuppressionReason, type Contact, type ContactProperty } from "@mailroom/proto/directory/v1/directory_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash, type Tone } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ImportJobs, jobJson, type ImportJob } from "../contacts-import.js";
import { contactWebhookHistory } from "../webhook-events.js";
import { contactAutomationsSection } from "../automation-runs.js";
import { contactActivitySection } from "../contact-activity.js";
import { registerContactCreatePages } from "./contacts-new.js";
import { chosenMapping, previewCsv, Uploads, withHeader, type MappingTarget } from "../csv-mapping.js";
import { mappingTableView } from "../views/csv-mapping.js";
import { render } from "../views/html.js";

type Form = Record<string, unknown>;
const str = (body: unknown, name: string): string => {
  const v = (body as Form | undefined)?.[name];
  return typeof v === "string" ? v : "";
};
const html = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page);
const CONTACT_ID = /^ctc_[0-9a-z]{26}$/;
const JOB_ID = /^imp_[0-9a-f]{24}$/;

const STATUS: Array<{ value: keyof typeof ContactStatus; label: string; tone: Tone }> = [
  { value: "SUBSCRIBED", label: "Subscribed", tone: "ok" },
  { value: "UNSUBSCRIBED", label: "Unsubscribed", tone: "warn" },
  { value: "OPT_IN_PENDING", label: "Opt-in pending", tone: "info" },
  { value: "ARCHIVED", label: "Archived", tone: "info" },
  { value: "BANNED", label: "Banned", tone: "bad" },
];
const statusBadgeOf = (s: ContactStatus) => {
  const found = STATUS.find((x) => ContactStatus[x.value] === s);
  return found ? statusBadge(found.label, found.tone) : statusBadge("Unknown", "info");
};
const REASONS: Record<number, string> = {
  [SuppressionReason.UNSUBSCRIBED]: "Unsubscribed",
  [SuppressionReason.HARD_BOUNCE]: "Hard bounce",
  [SuppressionReason.COMPLAINT]: "Spam complaint",
  [SuppressionReason.MANUAL]: "Added by hand",
  [SuppressionReason.IMPORTED]: "Imported",
};

/** A JSON property value as short text. */
const showValue = (v: unknown) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));
/** A property value as the edit form's text (the directory reads it back by the property's type). */
const textOf = (v: unknown) => (v === null || v === undefined ? "" : Array.isArray(v) ? v.join(", ") : String(v));
const TYPE_HINT: Partial<Record<PropertyType, string>> = {
  [PropertyType.NUMBER]: "a number",
  [PropertyType.BOOLEAN]: "true or false",
  [PropertyType.DATE]: "a date, YYYY-MM-DD",
  [PropertyType.SELECT]: "one of the options",
  [PropertyType.MULTI_SELECT]: "options, comma separated",
};
const readOnly = () => refusal({ code: "forbidden", status: 403, message: "This console session is read only (api_read key)." });

/** The edit form: names, timezone and every custom property, as text. */
function editForm(contact: Contact, props: ContactProperty[], csrf: string, typed?: Record<string, string>): string {
  const value = (key: string, current: unknown) => escapeHtml(typed ? (typed[key] ?? "") : textOf(current));
  const field = (key: string, label: string, current: unknown, hint = "") =>
    `<div class="field"><label for="e-${escapeHtml(key)}">${escapeHtml(label)}</label>${hint ? `<p class="muted" id="e-${escapeHtml(key)}-h" style="margin:0 0 .25rem">${escapeHtml(hint)}</p>` : ""}
<input id="e-${escapeHtml(key)}" name="${escapeHtml(key)}" value="${value(key, current)}" style="width:100%"${hint ? ` aria-describedby="e-${escapeHtml(key)}-h"` : ""}></div>`;
  const custom = props.map((p) => {
    const options = p.options.length ? `; options: ${p.options.map((o) => o.value).join(", ")}` : "";
    return field(`prop.${p.slug}`, p.displayName || p.slug, contact.properties?.[p.slug], `${p.slug}: ${TYPE_HINT[p.type] ?? "text"}${options}`);
  }).join("");
  return `<form method="post" action="${consoleUrl(`/contacts/${contact.id}`)}" class="card">${csrf}
<div class="grid">${field("firstName", "First name", contact.firstName)}${field("lastName", "Last name", contact.lastName)}</div>
${field("timezone", "Timezone", contact.timezone, "An IANA name such as Europe/Paris; empty for none.")}
${custom}<p class="muted">An empty field clears the value. The email address cannot change.</p>
<div class="actions"><button type="submit">Save contact</button></div></form>`;
}

export function registerContactPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  // Read when a request needs it: registering the pages touches no service client.
  const directory = () => deps.clients.directory;
  const jobs = new ImportJobs();
  const uploads = new Uploads();
  registerContactCreatePages(scope, deps);

  scope.get("/contacts", async (request, reply) => {
    const session = sessionOf(request);
    const search = str(request.query, "search").trim().slice(0, 200);
    const status = str(request.query, "status");
    const cursor = str(request.query, "cursor");
    const statusValue = STATUS.some((s) => s.value === status) ? ContactStatus[status as keyof typeof ContactStatus] : ContactStatus.UNSPECIFIED;
    const res = await directory().listContacts(
      { workspaceId: session.workspaceId, search, status: statusValue, page: { limit: 50, cursor }, newestFirst: true, includeCount: true },
      rpcOptions(request),
    );
    const rows = res.contacts.map((c) => `<tr><td data-label="Email"><a href="${consoleUrl(`/contacts/${c.id}`)}">${escapeHtml(c.email)}</a></td>
<td data-label="Name">${escapeHtml([c.firstName, c.lastName].filter(Boolean).join(" ")) || "—"}</td>
<td data-label="Status">${statusBadgeOf(c.status)}</td>
<td data-label="Added">${formatTime(c.createdAt && timestampDate(c.createdAt))}</td></tr>`).join("");
    const options = [`<option value="">Any status</option>`, ...STATUS.map((s) => `<option value="${s.value}"${s.value === status ? " selected" : ""}>${s.label}</option>`)].join("");
    const more = res.page?.hasMore ? `<p><a href="${consoleUrl("/contacts", { search, status, cursor: res.page.nextCursor })}">More contacts</a></p>` : "";
    const body = `<h1>Contacts</h1>
<div class="actions">${session.canEdit ? `<a class="button" href="${consoleUrl("/contacts/new")}">Add contact</a><a class="button" href="${consoleUrl("/contacts/import")}">Import CSV</a>` : ""}<a class="button secondary" href="${consoleUrl("/suppressions")}">Suppression list</a></div>
<form method="get" action="${consoleUrl("/contacts")}" class="row card" role="search">
<div class="field" style="flex:1 1 14rem"><label for="search">Search email or name</label><input id="search" name="search" type="search" value="${escapeHtml(search)}" style="width:100%"></div>
<div class="field"><label for="status">Status</label><select id="status" name="status">${options}</select></div>
<div class="field"><button type="submit">Filter</button></div></form>
<p class="muted" role="status">${res.totalCount !== undefined ? `${res.totalCount} matching contact${res.totalCount === 1n ? "" : "s"}` : ""}</p>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Contacts, newest first</caption>
<thead><tr><th>Email</th><th>Name</th><th>Status</th><th>Added</th></tr></thead><tbody>${rows}</tbody></table></div>${more}` : `<p class="muted">No contacts match.</p>`}`;
    return html(reply, consolePage({ title: "Contacts", session, active: "contacts", flash: request.consoleFlash, body }));
  });

  scope.get("/contacts/import", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const body = `<h1>Import contacts from CSV</h1>
<form method="post" action="${consoleUrl("/contacts/import/preview")}" enctype="multipart/form-data" class="card">${csrfField(session)}
<div class="field"><label for="file">CSV file (up to 10 MB)</label><input id="file" name="file" type="file" accept=".csv,text/csv" required aria-describedby="file-h"></div>
<div id="file-h" class="muted"><p>The first row names the columns: <code>email</code> (required), <code>firstName</code>, <code>lastName</code>,
<code>timezone</code>, <code>status</code> or <code>subscribed</code>, and any contact property of this workspace by its slug. A contact that exists already is updated.</p>
<p>The next page shows the first rows and lets you choose what each column is (or leave it out), whatever its header says.
Rows that cannot be imported are listed with their line number and the reason; every other row is imported.</p></div>
<div class="actions"><button type="submit">Preview</button><a class="button secondary" href="${consoleUrl("/contacts")}">Back to contacts</a></div></form>`;
    return html(reply, consolePage({ title: "Import contacts", session, active: "contacts", flash: request.consoleFlash, body }));
  });

  scope.post("/contacts/import", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const file = (request.body as Form | undefined)?.file;
    if (!Buffer.isBuffer(file) || file.length === 0) {
      setFlash(reply, { kind: "error", message: "Choose a CSV file to import (it was missing or empty)." });
      return seeOther(reply, consoleUrl("/contacts/import"));
    }
    // The import outlives the request; its calls still name the request that started it.
    const options = rpcOptions(request);
    const client = {
      listContactProperties: (req: Parameters<typeof deps.clients.directory.listContactProperties>[0]) => directory().listContactProperties(req, options),
      batchUpsertContacts: (req: Parameters<typeof deps.clients.directory.batchUpsertContacts>[0]) => directory().batchUpsertContacts(req, options),
    };
    const job = jobs.start(client, session.workspaceId, "upload.csv", file, request.log);
    return seeOther(reply, consoleUrl(`/contacts/import/${job.id}`));
  });

  scope.post("/contacts/import/preview", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const file = (request.body as Form | undefined)?.file;
    if (!Buffer.isBuffer(file) || file.length === 0) {
      setFlash(reply, { kind: "error", message: "Choose a CSV file to import (it was missing or empty)." });
      return seeOther(reply, consoleUrl("/contacts/import"));
    }
    try {
      previewCsv(file);
    } catch (err) {
      setFlash(reply, formError(err));
      return seeOther(reply, consoleUrl("/contacts/import"));
    }
    return seeOther(reply, consoleUrl(`/contacts/import/preview/${uploads.put(session.workspaceId, file).id}`));
  });

  /** What a column can be: the contact's fields and the workspace's properties, by the names the import reads. */
  const importTargets = async (request: FastifyRequest): Promise<MappingTarget[]> => [
    { value: "email", label: "Email address" }, { value: "firstName", label: "First name" }, { value: "lastName", label: "Last name" },
    { value: "timezone", label: "Timezone" }, { value: "status", label: "Status (SUBSCRIBED, UNSUBSCRIBED, …)" }, { value: "subscribed", label: "Subscribed (yes/no)" },
    ...(await customProperties(request)).map((p) => ({ value: p.slug, label: `Property: ${p.displayName || p.slug}` })),
  ];
  const uploadOf = (workspaceId: string, id: string) => {
    const upload = uploads.get(workspaceId, id);
    if (!upload) throw refusal({ code: "not_found", status: 404, message: "No such upload (an upload is kept for 30 minutes, by the server it was sent to): upload the file again." });
    return upload;
  };

  scope.get<{ Params: { upload: string } }>("/contacts/import/preview/:upload", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const upload = uploadOf(session.workspaceId, request.params.upload);
    const targets = await importTargets(request);
    const norm = (t: string) => t.toLowerCase().replace(/[\s_-]+/g, "");
    const byName = new Map(targets.map((t) => [norm(t.value), t.value]));
    for (const [alias, value] of [["emailaddress", "email"], ["mail", "email"], ["tz", "timezone"], ["first", "firstName"], ["last", "lastName"]]) byName.set(alias, value);
    const body = `<h1>Import contacts: map the columns</h1>
<form method="post" action="${consoleUrl(`/contacts/import/preview/${upload.id}`)}" class="card">${csrfField(session)}
${render(mappingTableView(previewCsv(upload.file), targets, (h) => byName.get(norm(h)) ?? ""))}
<p class="muted">One column must be the email address. A column left out is not imported; to import it as a new property, create the property first (Settings or <code>npx mailroom property create &lt;slug&gt; &lt;type&gt;</code>) and upload again.</p>
<div class="actions"><button type="submit">Import</button><a class="button secondary" href="${consoleUrl("/contacts/import")}">Choose another file</a></div></form>`;
    return html(reply, consolePage({ title: "Import contacts", session, active: "contacts", flash: request.consoleFlash, body }));
  });

  scope.post<{ Params: { upload: string } }>("/contacts/import/preview/:upload", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const upload = uploadOf(session.workspaceId, request.params.upload);
    const targets = await importTargets(request);
    const mapping = chosenMapping(request.body, previewCsv(upload.file).header.length, new Set(targets.map((t) => t.value)));
    if (!mapping.includes("email")) {
      setFlash(reply, { kind: "error", message: "Choose the column that holds the email address." });
      return seeOther(reply, consoleUrl(`/contacts/import/preview/${upload.id}`));
    }
    const options = rpcOptions(request);
    const client = {
      listContactProperties: (req: Parameters<typeof deps.clients.directory.listContactProperties>[0]) => directory().listContactProperties(req, options),
      batchUpsertContacts: (req: Parameters<typeof deps.clients.directory.batchUpsertContacts>[0]) => directory().batchUpsertContacts(req, options),
    };
    // The chosen names become the header the import reads; a column left out gets an empty name, which it skips.
    const job = jobs.start(client, session.workspaceId, "upload.csv", withHeader(upload.file, mapping), request.log);
    uploads.delete(session.workspaceId, upload.id);
    return seeOther(reply, consoleUrl(`/contacts/import/${job.id}`));
  });

  scope.get<{ Params: { job: string } }>("/contacts/import/:job", async (request, reply) => {
    const session = sessionOf(request);
    const job = JOB_ID.test(request.params.job) ? jobs.get(session.workspaceId, request.params.job) : undefined;
    if (!job) throw refusal({ code: "not_found", status: 404, message: "No such import (imports are kept for an hour, by the gateway that ran them)." });
    if (/application\/json/.test(String(request.headers.accept ?? ""))) return reply.send(jobJson(job));
    return html(reply, consolePage({ title: "Contact import", session, active: "contacts", flash: request.consoleFlash, body: importPage(job) }));
  });

  // The suppression list has a page of its own now (suppressions.ts); old links and bookmarks land there.
  scope.get("/contacts/suppressions", async (_request, reply) => reply.redirect(consoleUrl("/suppressions"), 302));

  scope.post("/contacts/suppressions", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const email = str(request.body, "email").trim();
    const detail = str(request.body, "detail").trim().slice(0, 200);
    try {
      await directory().addSuppression({ workspaceId: session.workspaceId, email, reason: SuppressionReason.MANUAL, detail: detail || "added in the console" }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${email} is suppressed: it gets no email from this workspace.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, consoleUrl("/suppressions"));
  });

  const loadContact = async (request: FastifyRequest, id: string): Promise<Contact> => {
    if (!CONTACT_ID.test(id)) throw refusal({ code: "contact_not_found", status: 404, message: "No such contact." });
    const { contact } = await directory().getContact({ workspaceId: sessionOf(request).workspaceId, contactId: id }, rpcOptions(request));
    if (!contact) throw refusal({ code: "contact_not_found", status: 404, message: "No such contact." });
    return contact;
  };
  const customProperties = async (request: FastifyRequest): Promise<ContactProperty[]> =>
    (await directory().listContactProperties({ workspaceId: sessionOf(request).workspaceId }, rpcOptions(request))).properties.filter((p) => !p.builtIn);

  scope.get<{ Params: { id: string } }>("/contacts/:id", async (request, reply) => {
    const contact = await loadContact(request, request.params.id);
    return html(reply, await contactPage(request, contact, request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const contact = await loadContact(request, request.params.id);
    const props = await customProperties(request);
    const typed: Record<string, string> = {};
    for (const key of ["firstName", "lastName", "timezone", ...props.map((p) => `prop.${p.slug}`)]) typed[key] = str(request.body, key).trim();
    // Text goes to the directory as text (it converts by type and names a bad value); an
    // emptied field clears its value.
    const textProperties: Record<string, string> = {};
    const cleared: JsonObject = {};
    for (const p of props) {
      const text = typed[`prop.${p.slug}`];
      if (text) textProperties[p.slug] = text;
      else if (contact.properties?.[p.slug] !== undefined && contact.properties?.[p.slug] !== null) cleared[p.slug] = null;
    }
    try {
      await directory().updateContact({
        workspaceId: session.workspaceId, contactId: contact.id,
        contact: { firstName: typed.firstName, lastName: typed.lastName, timezone: typed.timezone, textProperties, properties: cleared },
      }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Contact saved." });
      return seeOther(reply, consoleUrl(`/contacts/${contact.id}`));
    } catch (err) {
      return html(reply, await contactPage(request, contact, formError(err), typed), bodyFromError(err).statusCode);
    }
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id/unsubscribe", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const contact = await loadContact(request, request.params.id);
    // What the recipient's own unsubscribe link does: the suppression guards every send, and
    // the directory marks the contact UNSUBSCRIBED with it.
    await directory().addSuppression(
      { workspaceId: session.workspaceId, email: contact.email, reason: SuppressionReason.UNSUBSCRIBED, detail: "unsubscribed in the console" }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `${contact.email} is unsubscribed.` });
    return seeOther(reply, consoleUrl(`/contacts/${contact.id}`));
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id/resubscribe", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const contact = await loadContact(request, request.params.id);
    try {
      await directory().updateContact({ workspaceId: session.workspaceId, contactId: contact.id, contact: { status: ContactStatus.SUBSCRIBED } }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${contact.email} is subscribed again.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, consoleUrl(`/contacts/${contact.id}`));
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id/delete", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw readOnly();
    const contact = await loadContact(request, request.params.id);
    await directory().deleteContact({ workspaceId: session.workspaceId, contactId: contact.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Contact ${contact.email} deleted.` });
    return seeOther(reply, consoleUrl("/contacts"));
  });

  async function contactPage(request: FastifyRequest, contact: Contact, flash?: Flash, typed?: Record<string, string>): Promise<string> {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [events, suppression, definitions, hooks, automations, activity] = await Promise.all([
      directory().listContactEvents({ workspaceId: session.workspaceId, contactId: contact.id, page: { limit: 50 } }, opts),
      directory().checkSuppression({ workspaceId: session.workspaceId, emails: [contact.email] }, opts).then((r) => r.suppressed[0], () => undefined),
      session.canEdit ? customProperties(request) : Promise.resolve([]),
      // The webhooks unit keeps what its webhooks were sent about the contact; the page works without it.
      Promise.all([
        deps.clients.webhooks.listContactDeliveries({ workspaceId: session.workspaceId, contactId: contact.id, limit: 100 }, opts),
        deps.clients.webhooks.listWebhooks({ workspaceId: session.workspaceId }, opts),
      ]).then(([d, w]) => contactWebhookHistory(d.deliveries, new Map(w.webhooks.map((h) => [h.id, h.displayName || h.url])), "wh-h"), (err) => {
        request.log.warn({ err }, "webhook history not available");
        return `<p class="muted">The webhook history is not available right now.</p>`;
      }),
      // The automation unit's runs of this contact; the section says so when it is not available.
      contactAutomationsSection(deps, request, contact.id),
      // Everything that happened to the contact, merged across the units, paged by ?activity=.
      contactActivitySection(deps, request, contact, str(request.query, "activity").slice(0, 2000)),
    ]);
    const props = Object.entries(contact.properties ?? {});
    const builtIns: Array<[string, string]> = [
      ["Email", contact.email], ["First name", contact.firstName], ["Last name", contact.lastName], ["Timezone", contact.timezone],
      ["Source", ContactSource[contact.source] ?? ""], ["Id", contact.id],
    ];
    const dl = builtIns.map(([k, v]) => `<dt class="muted">${k}</dt><dd style="margin:0 0 .5rem">${escapeHtml(v) || "—"}</dd>`).join("");
    const propRows = props.map(([k, v]) => `<tr><th scope="row"><code>${escapeHtml(k)}</code></th><td>${escapeHtml(showValue(v))}</td></tr>`).join("");
    const history = [
      ...events.events.map((e) => ({
        at: e.timestamp ? timestampDate(e.timestamp) : e.receivedAt ? timestampDate(e.receivedAt) : new Date(0),
        text: `<strong>${escapeHtml(e.name)}</strong>${Object.keys(e.properties ?? {}).length ? ` <code>${escapeHtml(JSON.stringify(e.properties))}</code>` : ""}`,
        tone: "",
      })),
      ...(contact.updatedAt && contact.createdAt && contact.updatedAt.seconds !== contact.createdAt.seconds
        ? [{ at: timestampDate(contact.updatedAt), text: "Contact updated", tone: "" }] : []),
      ...(contact.createdAt ? [{ at: timestampDate(contact.createdAt), text: `Contact created (${escapeHtml(ContactSource[contact.source] ?? "unknown source")})`, tone: "ok" }] : []),
      ...(suppression?.createdAt ? [{ at: timestampDate(suppression.createdAt), text: `Suppressed: ${escapeHtml(REASONS[suppression.reason] ?? "other")}`, tone: "bad" }] : []),
    ].sort((a, b) => b.at.getTime() - a.at.getTime());
    const body = `<h1>${escapeHtml(contact.email)} ${statusBadgeOf(contact.status)}${suppression ? ` ${statusBadge(`Suppressed: ${REASONS[suppression.reason] ?? "other"}`, "bad")}` : ""}</h1>
<div class="grid"><section class="card" aria-labelledby="p-h"><h2 id="p-h" style="margin-top:0">Properties</h2><dl>${dl}</dl>
${propRows ? `<div class="table-wrap"><table class="data"><caption class="sr-only">Custom properties</caption><tbody>${propRows}</tbody></table></div>` : `<p class="muted">No custom properties.</p>`}</section>
<section class="card" aria-labelledby="h-h"><h2 id="h-h" style="margin-top:0">History</h2>
${history.length ? `<ol class="timeline">${history.map((h) => `<li${h.tone ? ` class="${h.tone}"` : ""}>${formatTime(h.at)}<br>${h.text}</li>`).join("")}</ol>` : `<p class="muted">Nothing yet.</p>`}</section></div>
<section aria-labelledby="act-tl-h"><h2 id="act-tl-h">Activity</h2>
<p class="muted">Emails sent to this contact with their opens, clicks and bounces, its events, automation runs, webhook deliveries, unsubscribe and creation, newest first.</p>
${activity}</section>
<section aria-labelledby="wh-h"><h2 id="wh-h">Webhook history</h2>
<p class="muted">The contact's CONTACT_* events that went to this workspace's webhooks, newest first.</p>
${hooks}</section>
<section aria-labelledby="aut-h"><h2 id="aut-h">Automations</h2>
<p class="muted">The automation runs this contact is in, newest first, with each step's time.</p>
${automations}</section>
${session.canEdit ? actions(contact, definitions, csrfField(session), suppression?.reason, typed) : ""}
<p><a href="${consoleUrl("/contacts")}">Back to contacts</a></p>`;
    return consolePage({ title: contact.email, session, active: "contacts", flash, body });
  }
}

/** The contact's forms: edit, unsubscribe (or resubscribe) and delete. */
function actions(contact: Contact, props: ContactProperty[], csrf: string, suppressed: SuppressionReason | undefined, typed?: Record<string, string>): string {
  const base = consoleUrl(`/contacts/${contact.id}`);
  const unsubscribed = contact.status === ContactStatus.UNSUBSCRIBED || suppressed === SuppressionReason.UNSUBSCRIBED;
  const blocked = suppressed === SuppressionReason.HARD_BOUNCE || suppressed === SuppressionReason.COMPLAINT || suppressed === SuppressionReason.MANUAL;
  const subscription = unsubscribed
    ? `<form method="post" action="${base}/resubscribe">${csrf}<p class="muted">Resubscribe only someone who asked for it: it lifts their unsubscribe.${blocked ? " A bounce, complaint or manual suppression stays." : ""}</p><button type="submit" class="secondary">Resubscribe</button></form>`
    : `<form method="post" action="${base}/unsubscribe" data-confirm="Unsubscribe ${escapeHtml(contact.email)}?">${csrf}<p class="muted">As their unsubscribe link does: no broadcast and no email reaches them until they resubscribe.</p><button type="submit" class="secondary">Unsubscribe</button></form>`;
  return `<section aria-labelledby="edit-h"><h2 id="edit-h">Edit</h2>${editForm(contact, props, csrf, typed)}</section>
<section aria-labelledby="act-h"><h2 id="act-h">Subscription and deletion</h2><div class="grid">
<div class="card">${subscription}</div>
<div class="card"><form method="post" action="${base}/delete" data-confirm="Delete the contact ${escapeHtml(contact.email)}? This cannot be undone.">${csrf}
<p class="muted">Deletes the contact and its properties. A suppression of the address stays, so deleting does not make it mailable again.</p>
<button type="submit" class="danger">Delete contact</button></form></div></div></section>`;
}

/** A 4xx from the directory is a message on the page; anything else is the error page. */
function formError(err: unknown): Flash {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  return { kind: "error", message: body.message };
}

function importPage(job: ImportJob): string {
  const j = jobJson(job);
  const running = job.state === "running";
  const url = consoleUrl(`/contacts/import/${job.id}`);
  const report = job.summary
    ? `<h2>Result</h2><ul><li>${job.summary.rows} rows read</li><li data-created>${job.summary.created} contacts created</li><li>${job.summary.updated} updated</li>
<li data-rejected-count>${job.summary.rejectedCount} rejected</li></ul>
${job.summary.stopped ? `<p class="flash error" role="alert">Stopped early at line ${job.summary.stopped.line}: ${escapeHtml(job.summary.stopped.reason)}</p>` : ""}
${job.summary.rejected.length ? `<h3 id="rejected-h">Rejected rows</h3><div class="table-wrap"><table class="data stack" aria-labelledby="rejected-h">
<thead><tr><th class="num">Line</th><th>Email</th><th>Reason</th></tr></thead><tbody>${job.summary.rejected.map((r) =>
      `<tr><td class="num" data-label="Line">${r.line}</td><td data-label="Email">${escapeHtml(r.email) || "—"}</td><td data-label="Reason">${escapeHtml(r.reason)}</td></tr>`).join("")}</tbody></table></div>
${job.summary.rejectedCount > job.summary.rejected.length ? `<p class="muted">Only the first ${job.summary.rejected.length} rejected rows are listed.</p>` : ""}` : ""}`
    : "";
  const failed = job.state === "failed" ? `<p class="flash error" role="alert">The import failed: ${escapeHtml(job.error ?? "")}</p>` : "";
  // Without JS the page reloads itself; with JS it polls the JSON and reloads once done (the report is server-rendered).
  const script = running ? `<noscript><meta http-equiv="refresh" content="2"></noscript><script>(function(){var bar=document.getElementById("bar"),txt=document.getElementById("bar-text");
function tick(){fetch(${JSON.stringify(url)},{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.ok?r.json():null}).then(function(d){if(!d)return;
bar.value=d.percent;txt.textContent=d.percent+"% · "+d.rows+" rows · "+d.rejected+" rejected";if(d.state!=="running")location.reload();else setTimeout(tick,700)}).catch(function(){setTimeout(tick,3000)})}
setTimeout(tick,500)})();</script>` : "";
  return `<h1>Contact import ${statusBadge(job.state === "running" ? "Importing" : job.state === "done" ? "Done" : "Failed", job.state === "done" ? "ok" : job.state === "failed" ? "bad" : "warn")}</h1>
<div class="card"><label for="bar">Progress</label><progress id="bar" max="100" value="${j.percent}" style="width:100%;height:1.5rem">${j.percent}%</progress>
<p id="bar-text" role="status" aria-live="polite">${j.percent}% · ${j.rows} rows · ${j.rejected} rejected</p>
${running ? `<p><a href="${url}">Reload</a></p>` : ""}</div>${failed}${report}
<div class="actions"><a class="button secondary" href="${consoleUrl("/contacts")}">Back to contacts</a><a class="button secondary" href="${consoleUrl("/contacts/import")}">Import another file</a></div>${script}`;
}
