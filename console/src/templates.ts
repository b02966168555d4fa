/**
 * Templates pages (DESIGN §10.2): templates, layouts and snippets alike — the list, a new one,
 * the editor with its preview beside it, a test send and the version history with restore.
 *
 *   GET  /templates?kind=&cursor=                    list (name, kind, format, version, updated) + create form
 *   POST /templates                                  create → the editor
 *   GET  /templates/:name?contact=&variables=        editor + preview (RenderTemplate with a contact
 *                                                    of the workspace and/or JSON values) + versions
 *   POST /templates/:name                            save (a new version when anything changed) → the
 *                                                    editor, with the preview's contact and values kept
 *   POST /templates/:name/preview                    the live preview: the form's unsaved content
 *                                                    rendered (RenderTemplate with a draft), JSON
 *                                                    { body } with the preview's new render
 *   POST /templates/:name/test                       send it to one address (EmailService.SendEmail,
 *                                                    templated: the API's send path)
 *   POST /templates/:name/versions/:version/restore  that version's content as the newest version
 *
 * The page's preview renders the saved template; as you type, the editor's script (our own,
 * inline: LIVE_PREVIEW_SCRIPT) posts the unsaved content to /preview and shows its render.
 * Without JavaScript "Save and preview" saves first; saving unchanged content makes no version.
 * A refused save (400 invalid_template with line and column) shows the form again with the
 * line marked.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Template, TemplateInputSchema } from "@mailroom/proto/directory/v1/directory_pb.js";
import type { TemplateVersion } from "@mailroom/proto/directory/v1/templates_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash } from "./layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "./session.js";
import { editable, formError, html, str } from "./form-values.js";
import {
  codeEditor, EDITOR_SCRIPT, EDITOR_STYLE, errorMarkOf, LIVE_PREVIEW_SCRIPT, previewBody, previewPane, type PreviewResult, type TemplateErrorMark,
} from "./template-editor.js";

/** As the directory checks it (services/directory/src/domain/templates.ts); anything else is never sent on. */
const TEMPLATE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const KINDS = ["template", "layout", "snippet"] as const;
type Kind = (typeof KINDS)[number];
const FORMATS = ["liquid", "mjml"] as const;
const CURSOR = /^[A-Za-z0-9_-]{1,200}$/;
const PAGE_SIZE = 50;
/** The preview's JSON values travel in the editor's URL: kept small. */
const MAX_VARIABLES = 4000;
const KIND_LABEL: Record<Kind, string> = { template: "Template", layout: "Layout", snippet: "Snippet" };
const KIND_PLURAL: Record<Kind, string> = { template: "Templates", layout: "Layouts", snippet: "Snippets" };

const kindOf = (t: Pick<Template, "kind">): Kind => ((KINDS as readonly string[]).includes(t.kind) ? (t.kind as Kind) : "template");
const formatOf = (t: { format: string }) => (t.format === "mjml" ? "mjml" : "liquid");
/** What the editor edits: an MJML template's source, else its HTML. */
const bodyOf = (t: { format: string; source: string; html: string }) => (t.format === "mjml" && t.source ? t.source : t.html);

/** A first body, so that a new one saves as it is and shows what the language can do. */
function starter(kind: Kind, format: string): string {
  if (kind === "layout") return `<!doctype html>\n<html>\n<body style="font-family:system-ui,sans-serif">\n{{ content }}\n</body>\n</html>`;
  if (kind === "snippet") return `<p style="color:#4a4a4a;font-size:13px">Sent by {{ company | default: "us" }}</p>`;
  if (format === "mjml") return `<mjml>\n  <mj-body>\n    <mj-section>\n      <mj-column>\n        <mj-text>Hi {{ firstName | default: "there" }},</mj-text>\n      </mj-column>\n    </mj-section>\n  </mj-body>\n</mjml>`;
  return `<p>Hi {{ firstName | default: "there" }},</p>\n{% if plan == "pro" %}<p>Thanks for being a Pro customer.</p>{% endif %}`;
}

interface EditValues {
  subject: string;
  previewText: string;
  html: string;
  text: string;
  layout: string;
  format: string;
}

interface PreviewChoice {
  contact: string;
  variables: string;
}

/** The preview's JSON values: an object, or a message saying what is wrong. */
function parseVariables(raw: string): { ok: true; value: JsonObject } | { ok: false; message: string } {
  if (!raw.trim()) return { ok: true, value: {} };
  if (raw.length > MAX_VARIABLES) return { ok: false, message: `The JSON values are limited to ${MAX_VARIABLES} characters.` };
  try {
    const v = JSON.parse(raw) as unknown;
    if (v && typeof v === "object" && !Array.isArray(v)) return { ok: true, value: v as JsonObject };
    return { ok: false, message: "The JSON values must be an object, e.g. {\"firstName\": \"Ann\"}." };
  } catch (err) {
    return { ok: false, message: `The JSON values do not parse: ${(err as Error).message}` };
  }
}

const editorUrl = (name: string, preview: PreviewChoice) =>
  consoleUrl(`/templates/${encodeURIComponent(name)}`, { contact: preview.contact, variables: preview.variables.trim() && preview.variables.trim() !== "{}" ? preview.variables : undefined });

export function registerTemplatePages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const directory = () => deps.clients.directory;

  // The error table's template_not_found is the send's 400 (a bad `template` field); a page that is not there is a 404.
  const missing = () => refusal({ code: "not_found", status: 404, message: "No template with this name exists in the workspace." });
  const isMissing = (err: unknown) => bodyFromError(err).code === "template_not_found";
  const checkName = (name: string) => {
    if (!TEMPLATE_NAME.test(name)) throw missing();
  };
  const load = async (request: FastifyRequest, name: string): Promise<Template> => {
    checkName(name);
    const { template } = await directory().getTemplate({ workspaceId: sessionOf(request).workspaceId, name }, rpcOptions(request)).catch((err: unknown) => {
      throw isMissing(err) ? missing() : err;
    });
    if (!template) throw missing();
    return template;
  };
  const layoutsOf = async (request: FastifyRequest): Promise<Template[]> =>
    (await directory().listTemplates({ workspaceId: sessionOf(request).workspaceId, kind: "layout", page: { limit: 100 } }, rpcOptions(request))).templates;

  function layoutSelect(layouts: Template[], chosen: string, form?: string): string {
    const options = layouts.map((l) => `<option value="${escapeHtml(l.name)}"${l.name === chosen ? " selected" : ""}>${escapeHtml(l.displayName || l.name)}</option>`).join("");
    return `<div class="field"><label for="layout">Layout</label><select id="layout" name="layout"${form ? ` form="${form}"` : ""}><option value="">None</option>${options}</select></div>`;
  }

  // ---- The list and the create form ----

  interface CreateValues { name: string; kind: Kind; format: string; subject: string; html: string; layout: string }

  async function listPage(request: FastifyRequest, flash?: Flash, create?: { values: CreateValues; error?: TemplateErrorMark }): Promise<string> {
    const session = sessionOf(request);
    const q = request.query as { kind?: unknown; cursor?: unknown };
    const kind = typeof q.kind === "string" && (KINDS as readonly string[]).includes(q.kind) ? (q.kind as Kind) : undefined;
    const cursor = typeof q.cursor === "string" ? q.cursor : "";
    if (cursor && !CURSOR.test(cursor)) throw refusal({ code: "invalid_cursor", status: 400, message: "This page of templates does not exist: start again from the first." });
    const opts = rpcOptions(request);
    const canCreate = mayPost(session, "/console/templates");
    const [res, layouts] = await Promise.all([
      directory().listTemplates({ workspaceId: session.workspaceId, kind: kind ?? "", page: { limit: PAGE_SIZE, cursor } }, opts),
      canCreate ? layoutsOf(request) : Promise.resolve([] as Template[]),
    ]);
    const tabs = [undefined, ...KINDS].map((k) => {
      const label = k ? KIND_PLURAL[k] : "All";
      return `<li><a href="${consoleUrl("/templates", { kind: k })}"${k === kind ? ' aria-current="page"' : ""}>${label}</a></li>`;
    }).join("");
    const rows = res.templates.map((t) => `<tr data-template="${escapeHtml(t.name)}"><td data-label="Name"><a href="${consoleUrl(`/templates/${encodeURIComponent(t.name)}`)}"><code>${escapeHtml(t.name)}</code></a>${t.displayName && t.displayName !== t.name ? `<br><span class="muted">${escapeHtml(t.displayName)}</span>` : ""}</td>
<td data-label="Kind">${statusBadge(KIND_LABEL[kindOf(t)], kindOf(t) === "template" ? "info" : "ok")}</td><td data-label="Format">${formatOf(t) === "mjml" ? "MJML" : "Liquid"}</td>
<td data-label="Version" class="num">${t.version || 1}</td><td data-label="Updated">${formatTime(t.updatedAt ? timestampDate(t.updatedAt) : undefined)}</td></tr>`).join("");
    const next = res.page?.hasMore && res.page.nextCursor ? `<p><a class="button secondary" rel="next" href="${escapeHtml(consoleUrl("/templates", { kind, cursor: res.page.nextCursor }))}">More</a></p>` : "";
    const body = `<style>${EDITOR_STYLE}
ul.tabs{list-style:none;padding:0;margin:0 0 1rem;display:flex;flex-wrap:wrap;gap:.25rem}ul.tabs a{display:inline-block;padding:.5rem .8rem;border-radius:6px;min-height:44px;text-decoration:none}
ul.tabs a[aria-current=page]{background:#111827;color:#fff}</style>
<h1>Templates</h1>
<p class="muted">Emails sent by name (<code>"template": "welcome"</code> in <code>POST /v1/emails</code>), the layouts that frame them (<code>{{ content }}</code>) and the snippets they render (<code>{% render "footer" %}</code>). Written in Liquid or MJML.</p>
<nav aria-label="Kinds"><ul class="tabs">${tabs}</ul></nav>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">${kind ? KIND_PLURAL[kind] : "Templates, layouts and snippets"}</caption><thead><tr><th>Name</th><th>Kind</th><th>Format</th><th class="num">Version</th><th>Updated</th></tr></thead><tbody>${rows}</tbody></table></div>${next}`
    : `<p class="muted">${kind ? `No ${KIND_PLURAL[kind].toLowerCase()} yet.` : "No templates yet."}</p>`}
${canCreate ? createForm(csrfField(session), layouts, create?.values ?? { name: "", kind: kind ?? "template", format: "liquid", subject: "", html: "", layout: "" }, create?.error) : ""}
<script>${EDITOR_SCRIPT}</script>`;
    return consolePage({ title: "Templates", session, active: "templates", flash, body });
  }

  function createForm(csrf: string, layouts: Template[], v: CreateValues, error?: TemplateErrorMark): string {
    const kindOptions = KINDS.map((k) => `<option value="${k}"${k === v.kind ? " selected" : ""}>${KIND_LABEL[k]}</option>`).join("");
    const formatOptions = FORMATS.map((f) => `<option value="${f}"${f === v.format ? " selected" : ""}>${f === "mjml" ? "MJML" : "Liquid (HTML)"}</option>`).join("");
    return `<h2 id="new">New template, layout or snippet</h2>
<form method="post" action="${consoleUrl("/templates")}" class="card">${csrf}
<div class="row"><div class="field"><label for="new-name">Name</label><input id="new-name" name="name" required maxlength="100" pattern="[A-Za-z0-9][A-Za-z0-9._\\-]*" value="${escapeHtml(v.name)}" aria-describedby="new-name-hint"><p class="muted" id="new-name-hint" style="margin:.25rem 0 0">Letters, digits, <code>.</code>, <code>_</code>, <code>-</code>; how the API and <code>{% render %}</code> name it.</p></div>
<div class="field"><label for="new-kind">Kind</label><select id="new-kind" name="kind">${kindOptions}</select></div>
<div class="field"><label for="new-format">Format</label><select id="new-format" name="format">${formatOptions}</select></div></div>
<div class="field"><label for="new-subject">Subject <span class="muted">(templates; layouts and snippets have none)</span></label><input id="new-subject" name="subject" value="${escapeHtml(v.subject)}" style="width:100%" placeholder="Welcome, {{ firstName | default: &quot;friend&quot; }}"></div>
${layouts.length ? layoutSelect(layouts, v.layout).replace('id="layout"', 'id="new-layout"').replace('for="layout"', 'for="new-layout"') : ""}
${codeEditor({ id: "new-html", name: "html", label: "Content", value: v.html, rows: 10, error, hint: "Leave it empty to start from an example; edit it with a preview after creating." })}
<div class="actions"><button type="submit">Create</button></div></form>`;
  }

  scope.get("/templates", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/templates", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const rawKind = str(request.body, "kind");
    const kind: Kind = (KINDS as readonly string[]).includes(rawKind) ? (rawKind as Kind) : "template";
    const format = str(request.body, "format") === "mjml" ? "mjml" : "liquid";
    const values: CreateValues = {
      name: str(request.body, "name").trim(), kind, format, subject: str(request.body, "subject").trim(),
      html: str(request.body, "html"), layout: kind === "template" ? str(request.body, "layout") : "",
    };
    const input: MessageInitShape<typeof TemplateInputSchema> = {
      name: values.name, kind, format, subject: values.subject, layout: values.layout,
      html: values.html.trim() ? values.html : starter(kind, format),
    };
    try {
      const { template } = await directory().createTemplate({ workspaceId: session.workspaceId, template: input }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${KIND_LABEL[kind]} "${template!.name}" created. Edit it beside its preview.` });
      return seeOther(reply, consoleUrl(`/templates/${encodeURIComponent(template!.name)}`));
    } catch (err) {
      const flash = formError(err);
      const mark = errorMarkOf(bodyFromError(err));
      return html(reply, await listPage(request, { kind: "error", message: flash.message }, { values, error: mark?.field === "html" ? mark : undefined }), flash.status);
    }
  });

  // ---- The editor ----

  /** The saved template rendered, or `draft` (the editor's unsaved content) in its place. */
  async function renderPreview(request: FastifyRequest, name: string, choice: PreviewChoice, draft?: EditValues & { kind: Kind }): Promise<PreviewResult> {
    const vars = parseVariables(choice.variables);
    if (!vars.ok) return { ok: false, message: vars.message };
    try {
      const r = await deps.clients.templates.renderTemplate(
        { workspaceId: sessionOf(request).workspaceId, name, variables: vars.value, contactId: choice.contact, ...(draft ? { draft } : {}) },
        rpcOptions(request),
      );
      return { ok: true, subject: r.subject, html: r.html, text: r.text, previewText: r.previewText };
    } catch (err) {
      const body = bodyFromError(err);
      if (body.statusCode >= 500) throw err;
      const mark = errorMarkOf(body);
      return { ok: false, message: mark ? `${mark.field}, line ${mark.line}, column ${mark.column}: ${mark.message}` : body.message };
    }
  }

  interface EditorState { values?: EditValues; error?: TemplateErrorMark; flash?: Flash; status?: number }

  async function editorPage(request: FastifyRequest, t: Template, choice: PreviewChoice, state: EditorState = {}): Promise<string> {
    const session = sessionOf(request);
    const kind = kindOf(t);
    const base = `/templates/${encodeURIComponent(t.name)}`;
    const canSave = mayPost(session, "/console/templates/:name");
    const opts = rpcOptions(request);
    if (choice.contact && !/^ctc_[0-9a-z]{26}$/.test(choice.contact)) choice = { ...choice, contact: "" };
    const [preview, versions, contacts, layouts] = await Promise.all([
      renderPreview(request, t.name, choice),
      deps.clients.templates.listTemplateVersions({ workspaceId: session.workspaceId, name: t.name }, opts).then((r) => r.versions, () => [] as TemplateVersion[]),
      directory().listContacts({ workspaceId: session.workspaceId, page: { limit: 50 } }, opts).then((r) => r.contacts, () => []),
      kind === "template" ? layoutsOf(request).catch(() => [] as Template[]) : Promise.resolve([] as Template[]),
    ]);
    const v: EditValues = state.values ?? { subject: t.subject, previewText: t.previewText, html: bodyOf(t), text: t.text, layout: t.layout, format: formatOf(t) };
    const fieldError = (field: string) => (state.error?.field === field ? state.error : undefined);
    const formId = canSave ? "tpl-form" : "preview-form";
    const csrf = csrfField(session);

    const contactOptions = contacts.map((c) => `<option value="${escapeHtml(c.id)}"${c.id === choice.contact ? " selected" : ""}>${escapeHtml(c.email)}${c.firstName || c.lastName ? ` (${escapeHtml([c.firstName, c.lastName].filter(Boolean).join(" "))})` : ""}</option>`).join("");
    const controls = `${canSave ? "" : `<form id="preview-form" method="get" action="${consoleUrl(base)}"></form>`}
<div class="field"><label for="preview-contact">Sample contact</label><select id="preview-contact" name="contact" form="${formId}"><option value="">None (only the JSON values)</option>${contactOptions}</select></div>
<div class="field"><label for="preview-variables">JSON values <span class="muted">(laid over the contact's)</span></label><textarea id="preview-variables" name="variables" form="${formId}" rows="4" spellcheck="false" style="font-family:ui-monospace,monospace;min-height:5rem" placeholder='{"firstName": "Ann", "order": {"items": [{"name": "Mug", "price": 12}]}}'>${escapeHtml(choice.variables)}</textarea></div>
<div class="actions" style="margin-top:0"><button type="submit" form="${formId}" class="secondary">${canSave ? "Save and preview" : "Update preview"}</button></div>`;

    const meta = `<p class="muted">${statusBadge(KIND_LABEL[kind], kind === "template" ? "info" : "ok")} ${formatOf(t) === "mjml" ? "MJML" : "Liquid"} · version ${t.version || 1} · updated ${formatTime(t.updatedAt ? timestampDate(t.updatedAt) : undefined)}${t.snippets.length ? ` · renders ${t.snippets.map((s) => `<a href="${consoleUrl(`/templates/${encodeURIComponent(s)}`)}"><code>${escapeHtml(s)}</code></a>`).join(", ")}` : ""}${t.layout ? ` · in layout <a href="${consoleUrl(`/templates/${encodeURIComponent(t.layout)}`)}"><code>${escapeHtml(t.layout)}</code></a>` : ""}</p>`;
    const formatOptions = FORMATS.map((f) => `<option value="${f}"${f === v.format ? " selected" : ""}>${f === "mjml" ? "MJML" : "Liquid (HTML)"}</option>`).join("");
    const live = canSave && mayPost(session, "/console/templates/:name/preview") ? ` data-live-preview="${consoleUrl(`${base}/preview`)}"` : "";
    const editor = `<form id="tpl-form" method="post" action="${consoleUrl(base)}" class="card"${live}${canSave ? "" : ' aria-label="Template content (read only)"'}>${canSave ? csrf : ""}
${kind === "snippet" ? "" : `<div class="field"><label for="subject">Subject</label><input id="subject" name="subject" value="${escapeHtml(v.subject)}" style="width:100%"${canSave ? "" : " readonly"}${fieldError("subject") ? ' aria-invalid="true" aria-describedby="subject-error"' : ""}>${fieldError("subject") ? `<p class="flash error" id="subject-error" role="alert" style="margin:.5rem 0 0">${escapeHtml(fieldError("subject")!.message)}</p>` : ""}</div>`}
${kind === "template" ? `<div class="field"><label for="previewText">Preview text <span class="muted">(optional)</span></label><input id="previewText" name="previewText" value="${escapeHtml(v.previewText)}" style="width:100%"${canSave ? "" : " readonly"}></div>` : ""}
<div class="row">${kind === "template" ? layoutSelect(layouts, v.layout) : ""}<div class="field"><label for="format">Format</label><select id="format" name="format">${formatOptions}</select></div></div>
${codeEditor({ id: "html", name: "html", label: v.format === "mjml" ? "MJML" : "HTML", value: v.html, readOnly: !canSave, error: fieldError("html") })}
<details${v.text || fieldError("text") ? " open" : ""}><summary>Plain text version <span class="muted">(generated from the HTML when empty)</span></summary>
${codeEditor({ id: "text", name: "text", label: "Plain text", value: v.text, rows: 8, readOnly: !canSave, error: fieldError("text") })}</details>
${canSave ? `<div class="actions"><button type="submit">Save</button></div>` : ""}</form>`;

    const testForm = kind === "template" && mayPost(session, "/console/templates/:name/test")
      ? `<section class="card" aria-labelledby="test-h"><h2 id="test-h" style="margin-top:0">Send a test</h2>
<p class="muted">Sends the saved version through the send path, with the JSON values above (the recipient's contact data when it is one).</p>
<form method="post" action="${consoleUrl(`${base}/test`)}" class="row">${csrf}<input type="hidden" name="variables" value="${escapeHtml(choice.variables)}"><input type="hidden" name="contact" value="${escapeHtml(choice.contact)}">
<div class="field" style="flex:1 1 16rem"><label for="test-to">To</label><input id="test-to" name="to" type="email" required value="${escapeHtml(session.memberEmail ?? "")}" style="width:100%"></div>
<div class="field"><button type="submit" class="secondary">Send test</button></div></form></section>`
      : "";

    const mayRestore = mayPost(session, "/console/templates/:name/versions/:version/restore");
    const current = t.version || 1;
    const versionRows = versions.map((ver) => `<tr data-version="${ver.version}"><td data-label="Version" class="num">${ver.version}${ver.version === current ? " <span class=\"muted\">(current)</span>" : ""}</td>
<td data-label="Saved">${formatTime(ver.createdAt ? timestampDate(ver.createdAt) : undefined)}</td><td data-label="Subject">${escapeHtml(ver.subject) || "—"}</td>
<td data-label="Content"><details><summary>Show</summary><pre>${escapeHtml(ver.format === "mjml" && ver.source ? ver.source : ver.html)}</pre></details></td>
<td>${ver.version !== current && mayRestore ? `<form method="post" action="${consoleUrl(`${base}/versions/${ver.version}/restore`)}" data-confirm="Restore version ${ver.version}? Its content becomes a new version; nothing is lost.">${csrf}<button type="submit" class="secondary small" aria-label="Restore version ${ver.version}">Restore</button></form>` : ""}</td></tr>`).join("");
    const versionsHtml = `<h2 id="versions">Versions</h2>${versionRows
      ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Saved versions, newest first</caption><thead><tr><th class="num">Version</th><th>Saved</th><th>Subject</th><th>Content</th><th><span class="sr-only">Actions</span></th></tr></thead><tbody>${versionRows}</tbody></table></div>`
      : `<p class="muted">No versions listed.</p>`}`;

    const body = `<style>${EDITOR_STYLE}</style>
<p><a href="${consoleUrl("/templates")}">← Templates</a></p>
<h1>${escapeHtml(t.displayName || t.name)}${t.displayName && t.displayName !== t.name ? ` <code style="font-size:1rem">${escapeHtml(t.name)}</code>` : ""}</h1>${meta}
<div class="tpl-split"><div>${editor}</div><div>${previewPane(t.name, preview, controls)}${testForm}</div></div>
${versionsHtml}
<script>${EDITOR_SCRIPT}</script>${live ? `<script>${LIVE_PREVIEW_SCRIPT}</script>` : ""}`;
    return consolePage({ title: `Template ${t.name}`, session, active: "templates", flash: state.flash, body });
  }

  const choiceOf = (src: unknown): PreviewChoice => ({ contact: str(src, "contact"), variables: str(src, "variables") });

  scope.get<{ Params: { name: string } }>("/templates/:name", async (request, reply) => {
    const t = await load(request, request.params.name);
    return html(reply, await editorPage(request, t, choiceOf(request.query), { flash: request.consoleFlash }));
  });

  /** The editor form's content (the fields its kind shows; the others as stored). */
  const editValuesOf = (t: Template, body: unknown): EditValues => {
    const kind = kindOf(t);
    return {
      subject: kind === "snippet" ? t.subject : str(body, "subject"),
      previewText: kind === "template" ? str(body, "previewText") : t.previewText,
      html: str(body, "html"),
      text: str(body, "text"),
      layout: kind === "template" ? str(body, "layout") : "",
      format: str(body, "format") === "mjml" ? "mjml" : "liquid",
    };
  };

  scope.post<{ Params: { name: string } }>("/templates/:name", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const t = await load(request, request.params.name);
    const kind = kindOf(t);
    const values = editValuesOf(t, request.body);
    const choice = choiceOf(request.body);
    // A full replace: what the editor does not show (sender, reply-to, name shown, status) is kept.
    const input: MessageInitShape<typeof TemplateInputSchema> = {
      name: t.name, kind, ...values,
      displayName: t.displayName, fromEmail: t.fromEmail, fromName: t.fromName, replyTo: t.replyTo, status: t.status,
    };
    try {
      const { template } = await directory().updateTemplate({ workspaceId: session.workspaceId, template: input }, rpcOptions(request));
      const saved = (template?.version ?? 0) !== (t.version ?? 0);
      setFlash(reply, { kind: "ok", message: saved ? `Saved as version ${template!.version}.` : "No changes to save; the preview is up to date." });
      return seeOther(reply, editorUrl(t.name, choice));
    } catch (err) {
      const flash = formError(err);
      const mark = errorMarkOf(bodyFromError(err));
      const error = mark ?? (/^subject\b/.test(flash.message) ? { field: "subject", line: 1, column: 1, message: flash.message } : undefined);
      return html(reply, await editorPage(request, t, choice, { values, error, flash: { kind: "error", message: `Not saved: ${flash.message}` } }), flash.status);
    }
  });

  // The live preview: nothing is saved; a refusal (bad Liquid at its line) is shown as the render.
  scope.post<{ Params: { name: string } }>("/templates/:name/preview", async (request, reply) => {
    editable(request);
    const t = await load(request, request.params.name);
    const result = await renderPreview(request, t.name, choiceOf(request.body), { ...editValuesOf(t, request.body), kind: kindOf(t) });
    return reply.header("cache-control", "no-store").type("application/json; charset=utf-8").send(JSON.stringify({ body: previewBody(t.name, result) }));
  });

  scope.post<{ Params: { name: string } }>("/templates/:name/test", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const t = await load(request, request.params.name);
    const choice = choiceOf(request.body);
    const to = str(request.body, "to").trim();
    const back = editorUrl(t.name, choice);
    if (kindOf(t) !== "template") {
      setFlash(reply, { kind: "error", message: `A ${kindOf(t)} is not sent on its own: send a template that uses it.` });
      return seeOther(reply, back);
    }
    const vars = parseVariables(choice.variables);
    if (!to || /\s/.test(to) || !to.includes("@")) {
      setFlash(reply, { kind: "error", message: "Give one email address to send the test to." });
      return seeOther(reply, `${back}#test-h`);
    }
    if (!vars.ok) {
      setFlash(reply, { kind: "error", message: vars.message });
      return seeOther(reply, `${back}#test-h`);
    }
    try {
      const res = await deps.clients.email.sendEmail({
        workspaceId: session.workspaceId,
        email: { to, content: { case: "templated", value: { template: t.name, variables: vars.value } }, tags: [{ name: "console", value: "template-test" }] },
      }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Test email sent to ${to}${res.email?.id ? ` (${res.email.id})` : ""}.` });
    } catch (err) {
      setFlash(reply, { kind: "error", message: `The test was not sent: ${formError(err).message}` });
    }
    return seeOther(reply, `${back}#test-h`);
  });

  scope.post<{ Params: { name: string; version: string } }>("/templates/:name/versions/:version/restore", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    checkName(request.params.name);
    const version = /^[1-9][0-9]{0,8}$/.test(request.params.version) ? Number(request.params.version) : 0;
    if (!version) throw refusal({ code: "template_version_not_found", status: 404, message: "The template has no saved version with this number." });
    try {
      const { template } = await deps.clients.templates.restoreTemplateVersion({ workspaceId: session.workspaceId, name: request.params.name, version }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Version ${version} restored as version ${template?.version ?? "?"}.` });
    } catch (err) {
      if (isMissing(err)) throw missing();
      setFlash(reply, { kind: "error", message: `Not restored: ${formError(err).message}` });
    }
    return seeOther(reply, `${consoleUrl(`/templates/${encodeURIComponent(request.params.name)}`)}#versions`);
  });
}
