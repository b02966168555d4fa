/**
 * Signup forms pages (DESIGN §9.4): the fields a form asks, the groups and topics a signup
 * joins, double opt-in and where the visitor goes after, and the form's hosted link and
 * embed snippets (an HTML <form> posting to /f/:id with the honeypot, and a fetch() variant).
 *
 *   GET  /forms                list
 *   GET  /forms/new            editor
 *   POST /forms                create
 *   GET  /forms/:id            hosted link, snippets, editor, delete
 *   POST /forms/:id            save (every field of the editor)
 *   POST /forms/:id/delete
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { PropertyType, type ContactProperty } from "@mailroom/proto/directory/v1/directory_pb.js";
import type { Form } from "@mailroom/proto/directory/v1/forms_pb.js";
import type { Group } from "@mailroom/proto/directory/v1/groups_pb.js";
import type { Topic } from "@mailroom/proto/directory/v1/topics_pb.js";
import { refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { HONEYPOT_FIELD } from "@mailroom/http/constants.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ID, all, editable, formError, html, notFoundUnless, str } from "../form-values.js";
import { groupLabel } from "../groups.js";
import { workspaceGroups } from "../segments.js";
import { workspaceTopics } from "../topics.js";

export interface FormFieldValue {
  name: string;
  label: string;
  required: boolean;
}

export interface FormValues {
  name: string;
  /** The fields asked besides email (email is always first and required). */
  fields: FormFieldValue[];
  groups: string[];
  topics: string[];
  doubleOptIn: boolean;
  redirectUrl: string;
  fromEmail: string;
  fromName: string;
  confirmTemplate: string;
}

const EMPTY: FormValues = { name: "", fields: [], groups: [], topics: [], doubleOptIn: true, redirectUrl: "", fromEmail: "", fromName: "", confirmTemplate: "" };

/** The contact fields a form may ask (besides email): first and last name, the custom properties. */
export function askableFields(properties: ContactProperty[]): Array<{ name: string; label: string; type: string }> {
  const out = [{ name: "firstName", label: "First name", type: "string" }, { name: "lastName", label: "Last name", type: "string" }];
  for (const p of properties) {
    if (p.builtIn) continue;
    out.push({ name: p.slug, label: p.displayName || p.slug, type: (PropertyType[p.type] ?? "STRING").toLowerCase() });
  }
  return out;
}

export const valuesOf = (f: Form): FormValues => ({
  name: f.name,
  fields: f.fields.filter((x) => x.name !== "email").map((x) => ({ name: x.name, label: x.label, required: x.required })),
  groups: [...f.groups], topics: [...f.topics], doubleOptIn: f.doubleOptIn, redirectUrl: f.redirectUrl,
  fromEmail: f.fromEmail, fromName: f.fromName, confirmTemplate: f.confirmTemplate,
});

/**
 * The editor's fields: `ask` lists the field names to ask; `label.<name>` and
 * `required.<name>` ("on") go with each. Email is always asked (the service adds it).
 */
export function valuesFromForm(body: unknown): FormValues {
  const asked = all(body, "ask").filter((n) => n && n !== "email");
  return {
    name: str(body, "name").trim(),
    fields: [...new Set(asked)].map((name) => ({ name, label: str(body, `label.${name}`).trim(), required: str(body, `required.${name}`) === "on" })),
    groups: all(body, "groups").filter(Boolean),
    topics: all(body, "topics").filter(Boolean),
    doubleOptIn: str(body, "doubleOptIn") === "on",
    redirectUrl: str(body, "redirectUrl").trim(),
    fromEmail: str(body, "fromEmail").trim(),
    fromName: str(body, "fromName").trim(),
    confirmTemplate: str(body, "confirmTemplate").trim(),
  };
}

export function formInput(v: FormValues) {
  return {
    name: v.name,
    fields: [{ name: "email", label: "Email", required: true }, ...v.fields],
    groups: v.groups, topics: v.topics, doubleOptIn: v.doubleOptIn, redirectUrl: v.redirectUrl,
    fromEmail: v.fromEmail, fromName: v.fromName, confirmTemplate: v.confirmTemplate,
  };
}
const ALL_INPUT_FIELDS = ["name", "fields", "groups", "topics", "doubleOptIn", "redirectUrl", "confirmTemplate", "fromEmail", "fromName"];

export const hostedUrl = (publicUrl: string, id: string) => `${publicUrl.replace(/\/+$/, "")}/f/${id}`;

/**
 * The snippets to paste into a site: a plain HTML form posting to the hosted endpoint (with
 * the honeypot, hidden off-screen), and a fetch() JSON variant that shows the answer inline.
 */
export function embedSnippets(form: Pick<Form, "id" | "name" | "fields">, publicUrl: string): { html: string; fetch: string } {
  const url = hostedUrl(publicUrl, form.id);
  const fields = form.fields.length ? form.fields : [{ name: "email", label: "Email", required: true }];
  const inputs = fields.map((f) => {
    const id = `mr-${form.id}-${f.name}`;
    const type = f.name === "email" ? "email" : "text";
    const req = f.required || f.name === "email" ? " required" : "";
    return `  <label for="${escapeHtml(id)}">${escapeHtml(f.label || f.name)}</label>\n  <input id="${escapeHtml(id)}" name="${escapeHtml(f.name)}" type="${type}"${req}>`;
  }).join("\n");
  const honeypot = `  <div style="position:absolute;left:-10000px" aria-hidden="true"><input name="${HONEYPOT_FIELD}" type="text" tabindex="-1" autocomplete="off"></div>`;
  const htmlSnippet = `<form action="${escapeHtml(url)}" method="post">
${inputs}
${honeypot}
  <button type="submit">Subscribe</button>
</form>`;
  const formId = `mr-form-${form.id}`;
  const fetchSnippet = `<form id="${formId}">
${inputs}
${honeypot}
  <button type="submit">Subscribe</button>
  <p role="status"></p>
</form>
<script>
document.getElementById(${JSON.stringify(formId)}).addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const status = form.querySelector("[role=status]");
  const body = Object.fromEntries(new FormData(form));
  try {
    const res = await fetch(${JSON.stringify(url)}, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    const data = await res.json();
    status.textContent = res.ok ? data.message : (data.message || "Something went wrong.");
    if (res.ok) form.reset();
  } catch {
    status.textContent = "Could not reach the server. Try again.";
  }
});
</script>`;
  return { html: htmlSnippet, fetch: fetchSnippet };
}

function editor(action: string, csrf: string, v: FormValues, ctx: { fields: ReturnType<typeof askableFields>; groups: Group[]; topics: Topic[] }, submit: string): string {
  const fieldRows = ctx.fields.map((f, i) => {
    const cur = v.fields.find((x) => x.name === f.name);
    return `<tr><td data-label="Ask"><div class="check"><input type="checkbox" id="ask-${i}" name="ask" value="${escapeHtml(f.name)}"${cur ? " checked" : ""}><label for="ask-${i}" style="font-weight:400">${escapeHtml(f.label)} <code>${escapeHtml(f.name)}</code></label></div></td>
<td data-label="Label"><input name="label.${escapeHtml(f.name)}" aria-label="Label of ${escapeHtml(f.label)}" value="${escapeHtml(cur?.label || f.label)}" maxlength="200"></td>
<td data-label="Required"><div class="check"><input type="checkbox" id="req-${i}" name="required.${escapeHtml(f.name)}"${cur?.required ? " checked" : ""}><label for="req-${i}" style="font-weight:400">Required</label></div></td></tr>`;
  }).join("");
  const boxes = (name: string, items: Array<{ id: string; label: string }>, chosen: string[], none: string) => items.length
    ? items.map((x, i) => `<div class="check"><input type="checkbox" id="${name}-${i}" name="${name}" value="${escapeHtml(x.id)}"${chosen.includes(x.id) ? " checked" : ""}><label for="${name}-${i}" style="font-weight:400">${escapeHtml(x.label)}</label></div>`).join("")
    : `<p class="muted">${none}</p>`;
  const input = (name: keyof FormValues, label: string, value: string, extra = "") =>
    `<div class="field"><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${escapeHtml(value)}" style="width:100%" ${extra}></div>`;
  return `<form method="post" action="${action}" class="card">${csrf}
${input("name", "Name", v.name, "required maxlength=200")}
<fieldset class="field"><legend>Fields (email is always asked, required)</legend>
<div class="table-wrap"><table class="data stack"><thead><tr><th>Ask</th><th>Label</th><th>Required</th></tr></thead><tbody>${fieldRows}</tbody></table></div></fieldset>
<div class="grid"><fieldset class="field"><legend>Groups a signup joins</legend>${boxes("groups", ctx.groups.map((g) => ({ id: g.id, label: groupLabel(g) })), v.groups, "No groups yet.")}</fieldset>
<fieldset class="field"><legend>Topics a signup subscribes to</legend>${boxes("topics", ctx.topics.map((t) => ({ id: t.id, label: t.name })), v.topics, "No topics yet.")}</fieldset></div>
<div class="field check"><input type="checkbox" id="f-doubleOptIn" name="doubleOptIn"${v.doubleOptIn ? " checked" : ""}><label for="f-doubleOptIn">Double opt-in: email a confirmation link; the contact is subscribed (and joins the groups and topics) once they follow it</label></div>
${input("redirectUrl", "Redirect after signup (optional URL; else a thank-you page)", v.redirectUrl, 'type="url" placeholder="https://example.com/thanks"')}
<details><summary>Confirmation email sender and template (optional)</summary>
<div class="grid">${input("fromName", "From name", v.fromName)}${input("fromEmail", "From address (verified)", v.fromEmail, 'type="email"')}</div>
${input("confirmTemplate", "Template name (else the built-in confirmation email)", v.confirmTemplate)}</details>
<div class="actions"><button type="submit">${submit}</button><a class="button secondary" href="${consoleUrl("/forms")}">Back to forms</a></div></form>`;
}

export function registerFormPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.forms;

  const load = async (request: FastifyRequest, id: string): Promise<Form> => {
    notFoundUnless(ID.form.test(id), "form_not_found", "form");
    const { form } = await rpc().getForm({ workspaceId: sessionOf(request).workspaceId, id }, rpcOptions(request));
    if (!form) throw refusal({ code: "form_not_found", status: 404, message: "No signup form with this id exists in the workspace." });
    return form;
  };
  const context = async (request: FastifyRequest) => {
    const [properties, groups, topics] = await Promise.all([
      deps.clients.directory.listContactProperties({ workspaceId: sessionOf(request).workspaceId }, rpcOptions(request)).then((r) => r.properties),
      workspaceGroups(deps, request),
      workspaceTopics(deps, request),
    ]);
    return { fields: askableFields(properties), groups, topics };
  };

  const newPage = async (request: FastifyRequest, v: FormValues, flash?: Flash) => {
    const session = sessionOf(request);
    const body = `<h1>New signup form</h1>${editor(consoleUrl("/forms"), csrfField(session), v, await context(request), "Create form")}`;
    return consolePage({ title: "New signup form", session, active: "forms", flash, body });
  };

  scope.get("/forms", async (request, reply) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const res = await rpc().listForms({ workspaceId: session.workspaceId, page: { limit: 50, cursor } }, rpcOptions(request));
    const rows = res.forms.map((f) => `<tr><td data-label="Form"><a href="${consoleUrl(`/forms/${f.id}`)}">${escapeHtml(f.name)}</a></td>
<td data-label="Fields">${f.fields.map((x) => `<code>${escapeHtml(x.name)}</code>`).join(", ")}</td>
<td data-label="Opt-in">${f.doubleOptIn ? statusBadge("double opt-in", "ok") : statusBadge("single opt-in", "warn")}</td>
<td data-label="Created">${formatTime(f.createdAt && timestampDate(f.createdAt))}</td></tr>`).join("");
    const more = res.page?.hasMore ? `<p><a href="${consoleUrl("/forms", { cursor: res.page.nextCursor })}">More forms</a></p>` : "";
    const body = `<h1>Signup forms</h1>
<p class="muted">A hosted page and an endpoint you can post to from your own site. Signups become contacts, join the form's groups and topics, and with double opt-in only once they confirm their address.</p>
<div class="actions">${session.canEdit ? `<a class="button" href="${consoleUrl("/forms/new")}">New form</a>` : ""}</div>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Signup forms</caption><thead><tr><th>Form</th><th>Fields</th><th>Opt-in</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : `<p class="muted">No signup forms yet.</p>`}`;
    return html(reply, consolePage({ title: "Signup forms", session, active: "forms", flash: request.consoleFlash, body }));
  });

  scope.get("/forms/new", async (request, reply) => {
    editable(request);
    return html(reply, await newPage(request, { ...EMPTY, fields: [{ name: "firstName", label: "First name", required: false }] }));
  });

  scope.post("/forms", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const v = valuesFromForm(request.body);
    try {
      const { form } = await rpc().createForm({ workspaceId: session.workspaceId, form: formInput(v) }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Form ${form!.name} created: link it or paste a snippet below into your site.` });
      return seeOther(reply, consoleUrl(`/forms/${form!.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await newPage(request, v, flash), flash.status);
    }
  });

  const formPage = async (request: FastifyRequest, f: Form, v: FormValues, flash?: Flash) => {
    const session = sessionOf(request);
    const ctx = await context(request);
    const link = hostedUrl(deps.config.publicUrl, f.id);
    const snippets = embedSnippets(f, deps.config.publicUrl);
    const csrf = csrfField(session);
    const base = consoleUrl(`/forms/${f.id}`);
    const names = (ids: string[], items: Array<{ id: string; label: string }>) =>
      ids.map((id) => escapeHtml(items.find((x) => x.id === id)?.label ?? id)).join(", ") || "none";
    const body = `<h1>${escapeHtml(f.name)}</h1>
<p class="muted">id <code>${escapeHtml(f.id)}</code> · ${f.doubleOptIn ? "double opt-in" : "single opt-in"} · joins groups: ${names(f.groups, ctx.groups.map((g) => ({ id: g.id, label: groupLabel(g) })))} · topics: ${names(f.topics, ctx.topics.map((t) => ({ id: t.id, label: t.name })))}</p>
<section aria-labelledby="link-h" class="card"><h2 id="link-h" style="margin-top:0">Hosted form</h2>
<p><a href="${escapeHtml(link)}" id="hosted-link" target="_blank" rel="noopener">${escapeHtml(link)}</a>
<button type="button" class="secondary small" data-copy="${escapeHtml(link)}" hidden>Copy link</button></p></section>
<section aria-labelledby="embed-h" class="card"><h2 id="embed-h" style="margin-top:0">Embed in your site</h2>
<p class="muted">The form posts to the hosted endpoint from any site. Keep the hidden <code>${HONEYPOT_FIELD}</code> field: people never see it, bots fill it, and such signups are ignored.</p>
<h3 id="snippet-html-h">HTML form</h3><pre id="snippet-html" aria-labelledby="snippet-html-h">${escapeHtml(snippets.html)}</pre>
<p><button type="button" class="secondary small" data-copy="${escapeHtml(snippets.html)}" hidden>Copy HTML form</button></p>
<h3 id="snippet-fetch-h">With fetch() (JSON, the answer shown in the page)</h3><pre id="snippet-fetch" aria-labelledby="snippet-fetch-h">${escapeHtml(snippets.fetch)}</pre>
<p><button type="button" class="secondary small" data-copy="${escapeHtml(snippets.fetch)}" hidden>Copy fetch() version</button></p></section>
${session.canEdit ? `<h2 id="edit-h">Edit</h2>${editor(base, csrf, v, ctx, "Save form")}
<h2>Delete</h2><form method="post" action="${base}/delete" data-confirm="Delete the form ${escapeHtml(f.name)}? Its link and embedded copies stop working.">${csrf}
<p class="muted">Its hosted page and every embedded copy stop accepting signups. Contacts who signed up stay.</p><button type="submit" class="danger">Delete form</button></form>` : ""}`;
    return consolePage({ title: f.name, session, active: "forms", flash, body });
  };

  scope.get<{ Params: { id: string } }>("/forms/:id", async (request, reply) => {
    const f = await load(request, request.params.id);
    return html(reply, await formPage(request, f, valuesOf(f), request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/forms/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const f = await load(request, request.params.id);
    const v = valuesFromForm(request.body);
    try {
      await rpc().updateForm({ workspaceId: session.workspaceId, id: f.id, form: formInput(v), updateFields: ALL_INPUT_FIELDS }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Form saved." });
      return seeOther(reply, consoleUrl(`/forms/${f.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await formPage(request, f, v, flash), flash.status);
    }
  });

  scope.post<{ Params: { id: string } }>("/forms/:id/delete", async (request, reply) => {
    editable(request);
    const f = await load(request, request.params.id);
    await rpc().deleteForm({ workspaceId: sessionOf(request).workspaceId, id: f.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Form ${f.name} deleted.` });
    return seeOther(reply, consoleUrl("/forms"));
  });
}
