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
 *
 * The markup is views/contacts.ts; the old suppression form is parsed with POST /v1/suppressions' schema.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ContactStatus, SuppressionReason, type Contact, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { REASON_TO_PB, createSuppressionSchema } from "@mailroom/http/suppressions-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ImportJobs, jobJson } from "../contacts-import.js";
import { contactWebhookHistory } from "../views/webhook-events.js";
import { contactAutomationsSection } from "../automation-runs.js";
import { contactActivitySection } from "../contact-activity.js";
import { registerContactCreatePages } from "./contacts-new.js";
import { chosenMapping, previewCsv, uploadedFile, Uploads, withHeader, type MappingTarget } from "../csv-mapping.js";
import { editable, html, parseWith, str } from "../form-values.js";
import { render } from "../views/html.js";
import { CONTACT_STATUSES, contactImportView, contactListView, contactMappingView, contactView, importJobView } from "../views/contacts.js";

const CONTACT_ID = /^ctc_[0-9a-z]{26}$/;
const JOB_ID = /^imp_[0-9a-f]{24}$/;


/** Back to the import form, saying the file was missing. */
function backToImport(reply: FastifyReply) {
  setFlash(reply, { kind: "error", message: "Choose a CSV file to import (it was missing or empty)." });
  return seeOther(reply, consoleUrl("/contacts/import"));
}

export function registerContactPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  // Read when a request needs it: registering the pages touches no service client.
  const contacts = () => deps.clients.contacts;
  const jobs = new ImportJobs();
  const uploads = new Uploads();
  registerContactCreatePages(scope, deps);

  scope.get("/contacts", async (request, reply) => {
    const session = sessionOf(request);
    const search = str(request.query, "search").trim().slice(0, 200);
    const status = str(request.query, "status");
    const cursor = str(request.query, "cursor");
    const statusValue = CONTACT_STATUSES.some((s) => s.value === status) ? ContactStatus[status as keyof typeof ContactStatus] : ContactStatus.UNSPECIFIED;
    const res = await contacts().listContacts(
      { workspaceId: session.workspaceId, search, status: statusValue, page: { limit: 50, cursor }, newestFirst: true, includeCount: true },
      rpcOptions(request),
    );
    const body = render(contactListView({
      contacts: res.contacts, search, status, totalCount: res.totalCount, nextCursor: res.page?.hasMore ? res.page.nextCursor : undefined, canEdit: session.canEdit,
    }));
    return html(reply, consolePage({ title: "Contacts", session, active: "contacts", flash: request.consoleFlash, body }));
  });

  scope.get("/contacts/import", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const body = render(contactImportView(csrfField(session)));
    return html(reply, consolePage({ title: "Import contacts", session, active: "contacts", flash: request.consoleFlash, body }));
  });

  scope.post("/contacts/import", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const file = uploadedFile(request.body);
    if (!file) return backToImport(reply);
    // The import outlives the request; its calls still name the request that started it.
    const options = rpcOptions(request);
    const client = {
      listContactProperties: (req: Parameters<typeof deps.clients.contacts.listContactProperties>[0]) => contacts().listContactProperties(req, options),
      batchUpsertContacts: (req: Parameters<typeof deps.clients.contacts.batchUpsertContacts>[0]) => contacts().batchUpsertContacts(req, options),
    };
    const job = jobs.start(client, session.workspaceId, "upload.csv", file, request.log);
    return seeOther(reply, consoleUrl(`/contacts/import/${job.id}`));
  });

  scope.post("/contacts/import/preview", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const file = uploadedFile(request.body);
    if (!file) return backToImport(reply);
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

  scope.get<{ Params: { upload: string } }>("/contacts/import/preview/:upload", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const upload = uploads.require(session.workspaceId, request.params.upload);
    const targets = await importTargets(request);
    const norm = (t: string) => t.toLowerCase().replace(/[\s_-]+/g, "");
    const byName = new Map(targets.map((t) => [norm(t.value), t.value]));
    for (const [alias, value] of [["emailaddress", "email"], ["mail", "email"], ["tz", "timezone"], ["first", "firstName"], ["last", "lastName"]]) byName.set(alias, value);
    const body = render(contactMappingView({
      uploadId: upload.id, preview: previewCsv(upload.file), targets, guess: (h) => byName.get(norm(h)) ?? "", csrf: csrfField(session),
    }));
    return html(reply, consolePage({ title: "Import contacts", session, active: "contacts", flash: request.consoleFlash, body }));
  });

  scope.post<{ Params: { upload: string } }>("/contacts/import/preview/:upload", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const upload = uploads.require(session.workspaceId, request.params.upload);
    const targets = await importTargets(request);
    const mapping = chosenMapping(request.body, previewCsv(upload.file).header.length, new Set(targets.map((t) => t.value)));
    if (!mapping.includes("email")) {
      setFlash(reply, { kind: "error", message: "Choose the column that holds the email address." });
      return seeOther(reply, consoleUrl(`/contacts/import/preview/${upload.id}`));
    }
    const options = rpcOptions(request);
    const client = {
      listContactProperties: (req: Parameters<typeof deps.clients.contacts.listContactProperties>[0]) => contacts().listContactProperties(req, options),
      batchUpsertContacts: (req: Parameters<typeof deps.clients.contacts.batchUpsertContacts>[0]) => contacts().batchUpsertContacts(req, options),
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
    return html(reply, consolePage({ title: "Contact import", session, active: "contacts", flash: request.consoleFlash, body: render(importJobView(job)) }));
  });

  // The suppression list has a page of its own now (suppressions.ts); old links and bookmarks land there.
  scope.get("/contacts/suppressions", async (_request, reply) => reply.redirect(consoleUrl("/suppressions"), 302));

  scope.post("/contacts/suppressions", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const detail = str(request.body, "detail").trim().slice(0, 200);
    // The request POST /v1/suppressions takes (an address, added by hand); the note is the console's own.
    const parsed = parseWith(createSuppressionSchema, { email: str(request.body, "email").trim(), reason: "manual" });
    if (!parsed.ok) {
      setFlash(reply, parsed.flash);
      return seeOther(reply, consoleUrl("/suppressions"));
    }
    const email = parsed.data.email ?? "";
    try {
      await contacts().addSuppression({ workspaceId: session.workspaceId, email, reason: REASON_TO_PB[parsed.data.reason ?? "manual"], detail: detail || "added in the console" }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${email} is suppressed: it gets no email from this workspace.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, consoleUrl("/suppressions"));
  });

  const loadContact = async (request: FastifyRequest, id: string): Promise<Contact> => {
    if (!CONTACT_ID.test(id)) throw refusal({ code: "contact_not_found", status: 404, message: "No such contact." });
    const { contact } = await contacts().getContact({ workspaceId: sessionOf(request).workspaceId, contactId: id }, rpcOptions(request));
    if (!contact) throw refusal({ code: "contact_not_found", status: 404, message: "No such contact." });
    return contact;
  };
  const customProperties = async (request: FastifyRequest): Promise<ContactProperty[]> =>
    (await contacts().listContactProperties({ workspaceId: sessionOf(request).workspaceId }, rpcOptions(request))).properties.filter((p) => !p.builtIn);

  scope.get<{ Params: { id: string } }>("/contacts/:id", async (request, reply) => {
    const contact = await loadContact(request, request.params.id);
    return html(reply, await contactPage(request, contact, request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const contact = await loadContact(request, request.params.id);
    const props = await customProperties(request);
    const typed: Record<string, string> = {};
    for (const key of ["firstName", "lastName", "timezone", ...props.map((p) => `prop.${p.slug}`)]) typed[key] = str(request.body, key).trim();
    // Text goes to the audience unit as text (it converts by type and names a bad value); an
    // emptied field clears its value.
    const textProperties: Record<string, string> = {};
    const cleared: JsonObject = {};
    for (const p of props) {
      const text = typed[`prop.${p.slug}`];
      if (text) textProperties[p.slug] = text;
      else if (contact.properties?.[p.slug] !== undefined && contact.properties?.[p.slug] !== null) cleared[p.slug] = null;
    }
    try {
      await contacts().updateContact({
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
    editable(request);
    const contact = await loadContact(request, request.params.id);
    // What the recipient's own unsubscribe link does: the suppression guards every send, and
    // the audience unit marks the contact UNSUBSCRIBED with it.
    await contacts().addSuppression(
      { workspaceId: session.workspaceId, email: contact.email, reason: SuppressionReason.UNSUBSCRIBED, detail: "unsubscribed in the console" }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `${contact.email} is unsubscribed.` });
    return seeOther(reply, consoleUrl(`/contacts/${contact.id}`));
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id/resubscribe", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const contact = await loadContact(request, request.params.id);
    try {
      await contacts().updateContact({ workspaceId: session.workspaceId, contactId: contact.id, contact: { status: ContactStatus.SUBSCRIBED } }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${contact.email} is subscribed again.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, consoleUrl(`/contacts/${contact.id}`));
  });

  scope.post<{ Params: { id: string } }>("/contacts/:id/delete", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const contact = await loadContact(request, request.params.id);
    await contacts().deleteContact({ workspaceId: session.workspaceId, contactId: contact.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Contact ${contact.email} deleted.` });
    return seeOther(reply, consoleUrl("/contacts"));
  });

  async function contactPage(request: FastifyRequest, contact: Contact, flash?: Flash, typed?: Record<string, string>): Promise<string> {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [events, suppression, definitions, hooks, automations, activity] = await Promise.all([
      contacts().listContactEvents({ workspaceId: session.workspaceId, contactId: contact.id, page: { limit: 50 } }, opts),
      contacts().checkSuppression({ workspaceId: session.workspaceId, emails: [contact.email] }, opts).then((r) => r.suppressed[0], () => undefined),
      session.canEdit ? customProperties(request) : Promise.resolve([]),
      // The webhooks unit keeps what its webhooks were sent about the contact; the page works without it.
      Promise.all([
        deps.clients.webhooks.listContactDeliveries({ workspaceId: session.workspaceId, contactId: contact.id, limit: 100 }, opts),
        deps.clients.webhooks.listWebhooks({ workspaceId: session.workspaceId }, opts),
      ]).then(([d, w]) => contactWebhookHistory(d.deliveries, new Map(w.webhooks.map((h) => [h.id, h.displayName || h.url])), "wh-h"), (err) => {
        request.log.warn({ err }, "webhook history not available");
        return undefined;
      }),
      // The automation unit's runs of this contact; the section says so when it is not available.
      contactAutomationsSection(deps, request, contact.id),
      // Everything that happened to the contact, merged across the units, paged by ?activity=.
      contactActivitySection(deps, request, contact, str(request.query, "activity").slice(0, 2000)),
    ]);
    const body = contactView({
      contact, events: events.events, suppression, definitions, activity, hooks, automations, canEdit: session.canEdit, csrf: csrfField(session), typed,
    });
    return consolePage({ title: contact.email, session, active: "contacts", flash, body: render(body) });
  }
}

/** A 4xx from the audience unit is a message on the page; anything else is the error page. */
function formError(err: unknown): Flash {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  return { kind: "error", message: body.message };
}
