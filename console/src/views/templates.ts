/**
 * Templates (/console/templates), the views: the list with its create form, and the editor
 * beside its preview with the test send and the versions. The handlers are pages/templates.ts.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Template } from "@mailroom/proto/accounts/v1/templates_pb.js";
import type { TemplateVersion } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { consoleUrl, formatTime, statusBadge } from "../layout.js";
import { html, trusted, type Html } from "./html.js";
import { codeEditor, EDITOR_SCRIPT, EDITOR_STYLE, LIVE_PREVIEW_SCRIPT, previewPane, type PreviewResult, type TemplateErrorMark } from "./template-editor.js";

export const KINDS = ["template", "layout", "snippet"] as const;
export type Kind = (typeof KINDS)[number];
const FORMATS = ["liquid", "mjml"] as const;
export const KIND_LABEL: Record<Kind, string> = { template: "Template", layout: "Layout", snippet: "Snippet" };
const KIND_PLURAL: Record<Kind, string> = { template: "Templates", layout: "Layouts", snippet: "Snippets" };

export const kindOf = (t: Pick<Template, "kind">): Kind => ((KINDS as readonly string[]).includes(t.kind) ? (t.kind as Kind) : "template");
export const formatOf = (t: { format: string }) => (t.format === "mjml" ? "mjml" : "liquid");
const time = (t: Timestamp | undefined) => trusted(formatTime(t ? timestampDate(t) : undefined));
const kindBadge = (kind: Kind) => trusted(statusBadge(KIND_LABEL[kind], kind === "template" ? "info" : "ok"));
const templateUrl = (name: string) => consoleUrl(`/templates/${encodeURIComponent(name)}`);
const formatOptions = (chosen: string) => FORMATS.map((f) => html`<option value="${f}"${f === chosen ? html` selected` : ""}>${f === "mjml" ? "MJML" : "Liquid (HTML)"}</option>`);

export interface EditValues {
  subject: string;
  previewText: string;
  html: string;
  text: string;
  layout: string;
  format: string;
}

export interface PreviewChoice {
  contact: string;
  variables: string;
}

export interface CreateValues { name: string; kind: Kind; format: string; subject: string; html: string; layout: string }

function layoutSelect(layouts: Template[], chosen: string, id = "layout"): Html {
  const options = layouts.map((l) => html`<option value="${l.name}"${l.name === chosen ? html` selected` : ""}>${l.displayName || l.name}</option>`);
  return html`<div class="field"><label for="${id}">Layout</label><select id="${id}" name="layout"><option value="">None</option>${options}</select></div>`;
}

export interface TemplateList {
  templates: Template[];
  kind?: Kind;
  nextCursor?: string;
  /** For a session that may create: the form's hidden CSRF input, the layouts, what was typed and where it was refused. */
  create?: { csrf: string; layouts: Template[]; values: CreateValues; error?: TemplateErrorMark };
}

export function templateListView({ templates, kind, nextCursor, create }: TemplateList): Html {
  const tabs = [undefined, ...KINDS].map((k) => html`<li><a href="${consoleUrl("/templates", { kind: k })}"${k === kind ? html` aria-current="page"` : ""}>${k ? KIND_PLURAL[k] : "All"}</a></li>`);
  const rows = templates.map((t) => html`<tr data-template="${t.name}"><td data-label="Name"><a href="${templateUrl(t.name)}"><code>${t.name}</code></a>${t.displayName && t.displayName !== t.name ? html`<br><span class="muted">${t.displayName}</span>` : ""}</td>
<td data-label="Kind">${kindBadge(kindOf(t))}</td><td data-label="Format">${formatOf(t) === "mjml" ? "MJML" : "Liquid"}</td>
<td data-label="Version" class="num">${t.version || 1}</td><td data-label="Updated">${time(t.updatedAt)}</td></tr>`);
  const next = nextCursor ? html`<p><a class="button secondary" rel="next" href="${consoleUrl("/templates", { kind, cursor: nextCursor })}">More</a></p>` : "";
  return html`<style>${trusted(EDITOR_STYLE)}
ul.tabs{list-style:none;padding:0;margin:0 0 1rem;display:flex;flex-wrap:wrap;gap:.25rem}ul.tabs a{display:inline-block;padding:.5rem .8rem;border-radius:6px;min-height:44px;text-decoration:none}
ul.tabs a[aria-current=page]{background:#111827;color:#fff}</style>
<h1>Templates</h1>
<p class="muted">Emails sent by name (<code>"template": "welcome"</code> in <code>POST /v1/emails</code>), the layouts that frame them (<code>{{ content }}</code>) and the snippets they render (<code>{% render "footer" %}</code>). Written in Liquid or MJML.</p>
<nav aria-label="Kinds"><ul class="tabs">${tabs}</ul></nav>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">${kind ? KIND_PLURAL[kind] : "Templates, layouts and snippets"}</caption><thead><tr><th>Name</th><th>Kind</th><th>Format</th><th class="num">Version</th><th>Updated</th></tr></thead><tbody>${rows}</tbody></table></div>${next}`
    : html`<p class="muted">${kind ? `No ${KIND_PLURAL[kind].toLowerCase()} yet.` : "No templates yet."}</p>`}
${create ? createForm(create.csrf, create.layouts, create.values, create.error) : ""}
<script>${trusted(EDITOR_SCRIPT)}</script>`;
}

function createForm(csrf: string, layouts: Template[], v: CreateValues, error?: TemplateErrorMark): Html {
  const kindOptions = KINDS.map((k) => html`<option value="${k}"${k === v.kind ? html` selected` : ""}>${KIND_LABEL[k]}</option>`);
  return html`<h2 id="new">New template, layout or snippet</h2>
<form method="post" action="${consoleUrl("/templates")}" class="card">${trusted(csrf)}
<div class="row"><div class="field"><label for="new-name">Name</label><input id="new-name" name="name" required maxlength="100" pattern="[A-Za-z0-9][A-Za-z0-9._\\-]*" value="${v.name}" aria-describedby="new-name-hint"><p class="muted" id="new-name-hint" style="margin:.25rem 0 0">Letters, digits, <code>.</code>, <code>_</code>, <code>-</code>; how the API and <code>{% render %}</code> name it.</p></div>
<div class="field"><label for="new-kind">Kind</label><select id="new-kind" name="kind">${kindOptions}</select></div>
<div class="field"><label for="new-format">Format</label><select id="new-format" name="format">${formatOptions(v.format)}</select></div></div>
<div class="field"><label for="new-subject">Subject <span class="muted">(templates; layouts and snippets have none)</span></label><input id="new-subject" name="subject" value="${v.subject}" style="width:100%" placeholder="Welcome, {{ firstName | default: &quot;friend&quot; }}"></div>
${layouts.length ? layoutSelect(layouts, v.layout, "new-layout") : ""}
${codeEditor({ id: "new-html", name: "html", label: "Content", value: v.html, rows: 10, error, hint: "Leave it empty to start from an example; edit it with a preview after creating." })}
<div class="actions"><button type="submit">Create</button></div></form>`;
}

export interface TemplateEditor {
  template: Template;
  /** What the form shows: the saved content, or what was typed when a save was refused. */
  values: EditValues;
  error?: TemplateErrorMark;
  choice: PreviewChoice;
  preview: PreviewResult;
  versions: TemplateVersion[];
  contacts: Contact[];
  layouts: Template[];
  /** The hidden CSRF input (markup), and what the session may post. */
  csrf: string;
  memberEmail: string;
  may: { save: boolean; livePreview: boolean; test: boolean; restore: boolean };
}

export function templateEditorView(e: TemplateEditor): Html {
  const { template: t, values: v, choice, may } = e;
  const kind = kindOf(t);
  const base = `/templates/${encodeURIComponent(t.name)}`;
  const fieldError = (field: string) => (e.error?.field === field ? e.error : undefined);
  const formId = may.save ? "tpl-form" : "preview-form";
  const csrf = trusted(e.csrf);

  const contactOptions = e.contacts.map((c) => html`<option value="${c.id}"${c.id === choice.contact ? html` selected` : ""}>${c.email}${c.firstName || c.lastName ? ` (${[c.firstName, c.lastName].filter(Boolean).join(" ")})` : ""}</option>`);
  const controls = html`${may.save ? "" : html`<form id="preview-form" method="get" action="${consoleUrl(base)}"></form>`}
<div class="field"><label for="preview-contact">Sample contact</label><select id="preview-contact" name="contact" form="${formId}"><option value="">None (only the JSON values)</option>${contactOptions}</select></div>
<div class="field"><label for="preview-variables">JSON values <span class="muted">(laid over the contact's)</span></label><textarea id="preview-variables" name="variables" form="${formId}" rows="4" spellcheck="false" style="font-family:ui-monospace,monospace;min-height:5rem" placeholder='{"firstName": "Ann", "order": {"items": [{"name": "Mug", "price": 12}]}}'>${choice.variables}</textarea></div>
<div class="actions" style="margin-top:0"><button type="submit" form="${formId}" class="secondary">${may.save ? "Save and preview" : "Update preview"}</button></div>`;

  const link = (name: string) => html`<a href="${templateUrl(name)}"><code>${name}</code></a>`;
  const meta = html`<p class="muted">${kindBadge(kind)} ${formatOf(t) === "mjml" ? "MJML" : "Liquid"} · version ${t.version || 1} · updated ${time(t.updatedAt)}${t.snippets.length ? html` · renders ${t.snippets.map((s, i) => (i ? html`, ${link(s)}` : link(s)))}` : ""}${t.layout ? html` · in layout ${link(t.layout)}` : ""}</p>`;
  const live = may.save && may.livePreview;
  const subjectError = fieldError("subject");
  const editor = html`<form id="tpl-form" method="post" action="${consoleUrl(base)}" class="card"${live ? html` data-live-preview="${consoleUrl(`${base}/preview`)}"` : ""}${may.save ? "" : html` aria-label="Template content (read only)"`}>${may.save ? csrf : ""}
${kind === "snippet" ? "" : html`<div class="field"><label for="subject">Subject</label><input id="subject" name="subject" value="${v.subject}" style="width:100%"${may.save ? "" : html` readonly`}${subjectError ? html` aria-invalid="true" aria-describedby="subject-error"` : ""}>${subjectError ? html`<p class="flash error" id="subject-error" role="alert" style="margin:.5rem 0 0">${subjectError.message}</p>` : ""}</div>`}
${kind === "template" ? html`<div class="field"><label for="previewText">Preview text <span class="muted">(optional)</span></label><input id="previewText" name="previewText" value="${v.previewText}" style="width:100%"${may.save ? "" : html` readonly`}></div>` : ""}
<div class="row">${kind === "template" ? layoutSelect(e.layouts, v.layout) : ""}<div class="field"><label for="format">Format</label><select id="format" name="format">${formatOptions(v.format)}</select></div></div>
${codeEditor({ id: "html", name: "html", label: v.format === "mjml" ? "MJML" : "HTML", value: v.html, readOnly: !may.save, error: fieldError("html") })}
<details${v.text || fieldError("text") ? html` open` : ""}><summary>Plain text version <span class="muted">(generated from the HTML when empty)</span></summary>
${codeEditor({ id: "text", name: "text", label: "Plain text", value: v.text, rows: 8, readOnly: !may.save, error: fieldError("text") })}</details>
${may.save ? html`<div class="actions"><button type="submit">Save</button></div>` : ""}</form>`;

  const testForm = kind === "template" && may.test
    ? html`<section class="card" aria-labelledby="test-h"><h2 id="test-h" style="margin-top:0">Send a test</h2>
<p class="muted">Sends the saved version through the send path, with the JSON values above (the recipient's contact data when it is one).</p>
<form method="post" action="${consoleUrl(`${base}/test`)}" class="row">${csrf}<input type="hidden" name="variables" value="${choice.variables}"><input type="hidden" name="contact" value="${choice.contact}">
<div class="field" style="flex:1 1 16rem"><label for="test-to">To</label><input id="test-to" name="to" type="email" required value="${e.memberEmail}" style="width:100%"></div>
<div class="field"><button type="submit" class="secondary">Send test</button></div></form></section>`
    : "";

  const current = t.version || 1;
  const versionRows = e.versions.map((ver) => html`<tr data-version="${ver.version}"><td data-label="Version" class="num">${ver.version}${ver.version === current ? html` <span class="muted">(current)</span>` : ""}</td>
<td data-label="Saved">${time(ver.createdAt)}</td><td data-label="Subject">${ver.subject || "—"}</td>
<td data-label="Content"><details><summary>Show</summary><pre>${ver.format === "mjml" && ver.source ? ver.source : ver.html}</pre></details></td>
<td>${ver.version !== current && may.restore ? html`<form method="post" action="${consoleUrl(`${base}/versions/${ver.version}/restore`)}" data-confirm="Restore version ${ver.version}? Its content becomes a new version; nothing is lost.">${csrf}<button type="submit" class="secondary small" aria-label="Restore version ${ver.version}">Restore</button></form>` : ""}</td></tr>`);
  const versions = html`<h2 id="versions">Versions</h2>${versionRows.length
    ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Saved versions, newest first</caption><thead><tr><th class="num">Version</th><th>Saved</th><th>Subject</th><th>Content</th><th><span class="sr-only">Actions</span></th></tr></thead><tbody>${versionRows}</tbody></table></div>`
    : html`<p class="muted">No versions listed.</p>`}`;

  return html`<style>${trusted(EDITOR_STYLE)}</style>
<p><a href="${consoleUrl("/templates")}">← Templates</a></p>
<h1>${t.displayName || t.name}${t.displayName && t.displayName !== t.name ? html` <code style="font-size:1rem">${t.name}</code>` : ""}</h1>${meta}
<div class="tpl-split"><div>${editor}</div><div>${previewPane(t.name, e.preview, controls)}${testForm}</div></div>
${versions}
<script>${trusted(EDITOR_SCRIPT)}</script>${live ? html`<script>${trusted(LIVE_PREVIEW_SCRIPT)}</script>` : ""}`;
}
