/**
 * Signup forms (/console/forms): the views, and the embed snippets a site pastes. The handlers
 * are pages/forms.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Form } from "@mailroom/proto/audience/v1/forms_pb.js";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import type { Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { HONEYPOT_FIELD } from "@mailroom/http/constants.js";
import { consoleUrl, formatTime, statusBadge } from "../layout.js";
import { scriptJson } from "../filter-builder.js";
import { groupLabel } from "../groups.js";
import { html, render, trusted, type Html } from "./html.js";

export interface FormFieldValue {
  name: string;
  label: string;
  required: boolean;
}

/** The editor's values (as typed, or the form's). */
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

/** What the editor offers: the askable contact fields, the workspace's groups and topics. */
export interface EditorContext {
  fields: Array<{ name: string; label: string; type: string }>;
  groups: Group[];
  topics: Topic[];
}

export const hostedUrl = (publicUrl: string, id: string) => `${publicUrl.replace(/\/+$/, "")}/f/${id}`;

/**
 * The snippets to paste into a site: a plain HTML form posting to the hosted endpoint (with
 * the honeypot, hidden off-screen), and a fetch() JSON variant that shows the answer inline.
 */
export function embedSnippets(form: Pick<Form, "id" | "name" | "fields">, publicUrl: string): { html: string; fetch: string } {
  const url = hostedUrl(publicUrl, form.id);
  const fields = form.fields.length ? form.fields : [{ name: "email", label: "Email", required: true }];
  const inputs = fields.map((f, i) => {
    const id = `mr-${form.id}-${f.name}`;
    const type = f.name === "email" ? "email" : "text";
    const req = f.required || f.name === "email" ? " required" : "";
    return html`${i ? "\n" : ""}  <label for="${id}">${f.label || f.name}</label>\n  <input id="${id}" name="${f.name}" type="${type}"${req}>`;
  });
  const honeypot = html`  <div style="position:absolute;left:-10000px" aria-hidden="true"><input name="${HONEYPOT_FIELD}" type="text" tabindex="-1" autocomplete="off"></div>`;
  const htmlSnippet = html`<form action="${url}" method="post">
${inputs}
${honeypot}
  <button type="submit">Subscribe</button>
</form>`;
  const formId = `mr-form-${form.id}`;
  const fetchSnippet = html`<form id="${formId}">
${inputs}
${honeypot}
  <button type="submit">Subscribe</button>
  <p role="status"></p>
</form>
<script>
document.getElementById(${trusted(scriptJson(formId))}).addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const status = form.querySelector("[role=status]");
  const body = Object.fromEntries(new FormData(form));
  try {
    const res = await fetch(${trusted(scriptJson(url))}, {
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
  return { html: render(htmlSnippet), fetch: render(fetchSnippet) };
}

/** The workspace's forms. */
export function formListView(opts: { forms: Form[]; nextCursor?: string; canEdit: boolean }): Html {
  const rows = opts.forms.map((f) => html`<tr><td data-label="Form"><a href="${consoleUrl(`/forms/${f.id}`)}">${f.name}</a></td>
<td data-label="Fields">${f.fields.map((x, i) => html`${i ? ", " : ""}<code>${x.name}</code>`)}</td>
<td data-label="Opt-in">${trusted(f.doubleOptIn ? statusBadge("double opt-in", "ok") : statusBadge("single opt-in", "warn"))}</td>
<td data-label="Created">${trusted(formatTime(f.createdAt && timestampDate(f.createdAt)))}</td></tr>`);
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl("/forms", { cursor: opts.nextCursor })}">More forms</a></p>` : "";
  return html`<h1>Signup forms</h1>
<p class="muted">A hosted page and an endpoint you can post to from your own site. Signups become contacts, join the form's groups and topics, and with double opt-in only once they confirm their address.</p>
<div class="actions">${opts.canEdit ? html`<a class="button" href="${consoleUrl("/forms/new")}">New form</a>` : ""}</div>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Signup forms</caption><thead><tr><th>Form</th><th>Fields</th><th>Opt-in</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No signup forms yet.</p>`}`;
}

/** The editor: every field of a form; `action` is where it posts, `csrf` the hidden input. */
export function formEditorView(action: string, csrf: string, v: FormValues, ctx: EditorContext, submit: string): Html {
  const fieldRows = ctx.fields.map((f, i) => {
    const cur = v.fields.find((x) => x.name === f.name);
    return html`<tr><td data-label="Ask"><div class="check"><input type="checkbox" id="ask-${i}" name="ask" value="${f.name}"${cur ? " checked" : ""}><label for="ask-${i}" style="font-weight:400">${f.label} <code>${f.name}</code></label></div></td>
<td data-label="Label"><input name="label.${f.name}" aria-label="Label of ${f.label}" value="${cur?.label || f.label}" maxlength="200"></td>
<td data-label="Required"><div class="check"><input type="checkbox" id="req-${i}" name="required.${f.name}"${cur?.required ? " checked" : ""}><label for="req-${i}" style="font-weight:400">Required</label></div></td></tr>`;
  });
  const boxes = (name: string, items: Array<{ id: string; label: string }>, chosen: string[], none: string) => items.length
    ? items.map((x, i) => html`<div class="check"><input type="checkbox" id="${name}-${i}" name="${name}" value="${x.id}"${chosen.includes(x.id) ? " checked" : ""}><label for="${name}-${i}" style="font-weight:400">${x.label}</label></div>`)
    : html`<p class="muted">${none}</p>`;
  const input = (name: keyof FormValues, label: string, value: string, extra = "") =>
    html`<div class="field"><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${value}" style="width:100%" ${trusted(extra)}></div>`;
  return html`<form method="post" action="${action}" class="card">${trusted(csrf)}
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

/** The new form's page: the editor, empty. */
export const newFormView = (csrf: string, v: FormValues, ctx: EditorContext): Html =>
  html`<h1>New signup form</h1>${formEditorView(consoleUrl("/forms"), csrf, v, ctx, "Create form")}`;

/** One form: its hosted link, the snippets, and for an editor the editor and delete. */
export function formView(opts: { form: Form; values: FormValues; ctx: EditorContext; publicUrl: string; canEdit: boolean; csrf: string }): Html {
  const { form: f, ctx } = opts;
  const link = hostedUrl(opts.publicUrl, f.id);
  const snippets = embedSnippets(f, opts.publicUrl);
  const base = consoleUrl(`/forms/${f.id}`);
  const names = (ids: string[], items: Array<{ id: string; label: string }>) =>
    ids.map((id) => items.find((x) => x.id === id)?.label ?? id).join(", ") || "none";
  return html`<h1>${f.name}</h1>
<p class="muted">id <code>${f.id}</code> · ${f.doubleOptIn ? "double opt-in" : "single opt-in"} · joins groups: ${names(f.groups, ctx.groups.map((g) => ({ id: g.id, label: groupLabel(g) })))} · topics: ${names(f.topics, ctx.topics.map((t) => ({ id: t.id, label: t.name })))}</p>
<section aria-labelledby="link-h" class="card"><h2 id="link-h" style="margin-top:0">Hosted form</h2>
<p><a href="${link}" id="hosted-link" target="_blank" rel="noopener">${link}</a>
<button type="button" class="secondary small" data-copy="${link}" hidden>Copy link</button></p></section>
<section aria-labelledby="embed-h" class="card"><h2 id="embed-h" style="margin-top:0">Embed in your site</h2>
<p class="muted">The form posts to the hosted endpoint from any site. Keep the hidden <code>${HONEYPOT_FIELD}</code> field: people never see it, bots fill it, and such signups are ignored.</p>
<h3 id="snippet-html-h">HTML form</h3><pre id="snippet-html" aria-labelledby="snippet-html-h">${snippets.html}</pre>
<p><button type="button" class="secondary small" data-copy="${snippets.html}" hidden>Copy HTML form</button></p>
<h3 id="snippet-fetch-h">With fetch() (JSON, the answer shown in the page)</h3><pre id="snippet-fetch" aria-labelledby="snippet-fetch-h">${snippets.fetch}</pre>
<p><button type="button" class="secondary small" data-copy="${snippets.fetch}" hidden>Copy fetch() version</button></p></section>
${opts.canEdit ? html`<h2 id="edit-h">Edit</h2>${formEditorView(base, opts.csrf, opts.values, ctx, "Save form")}
<h2>Delete</h2><form method="post" action="${base}/delete" data-confirm="Delete the form ${f.name}? Its link and embedded copies stop working.">${trusted(opts.csrf)}
<p class="muted">Its hosted page and every embedded copy stop accepting signups. Contacts who signed up stay.</p><button type="submit" class="danger">Delete form</button></form>` : ""}`;
}
