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
 * line marked. The markup is views/templates.ts and views/template-editor.ts.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Template, TemplateInputSchema } from "@mailroom/proto/accounts/v1/templates_pb.js";
import type { TemplateVersion } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "../session.js";
import { editable, formError, html, str } from "../form-values.js";
import { render } from "../views/html.js";
import { errorMarkOf, previewBody, type PreviewResult, type TemplateErrorMark } from "../views/template-editor.js";
import {
  KINDS, KIND_LABEL, formatOf, kindOf, templateEditorView, templateListView, type CreateValues, type EditValues, type Kind, type PreviewChoice,
} from "../views/templates.js";

/** As the accounts unit checks it (services/accounts/src/domain/templates.ts); anything else is never sent on. */
const TEMPLATE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const CURSOR = /^[A-Za-z0-9_-]{1,200}$/;
const PAGE_SIZE = 50;
/** The preview's JSON values travel in the editor's URL: kept small. */
const MAX_VARIABLES = 4000;

/** What the editor edits: an MJML template's source, else its HTML. */
const bodyOf = (t: { format: string; source: string; html: string }) => (t.format === "mjml" && t.source ? t.source : t.html);

/** A first body, so that a new one saves as it is and shows what the language can do. */
function starter(kind: Kind, format: string): string {
  if (kind === "layout") return `<!doctype html>\n<html>\n<body style="font-family:system-ui,sans-serif">\n{{ content }}\n</body>\n</html>`;
  if (kind === "snippet") return `<p style="color:#4a4a4a;font-size:13px">Sent by {{ company | default: "us" }}</p>`;
  if (format === "mjml") return `<mjml>\n  <mj-body>\n    <mj-section>\n      <mj-column>\n        <mj-text>Hi {{ firstName | default: "there" }},</mj-text>\n      </mj-column>\n    </mj-section>\n  </mj-body>\n</mjml>`;
  return `<p>Hi {{ firstName | default: "there" }},</p>\n{% if plan == "pro" %}<p>Thanks for being a Pro customer.</p>{% endif %}`;
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
  const templates = () => deps.clients.templates;

  // The error table's template_not_found is the send's 400 (a bad `template` field); a page that is not there is a 404.
  const missing = () => refusal({ code: "not_found", status: 404, message: "No template with this name exists in the workspace." });
  const isMissing = (err: unknown) => bodyFromError(err).code === "template_not_found";
  const checkName = (name: string) => {
    if (!TEMPLATE_NAME.test(name)) throw missing();
  };
  const load = async (request: FastifyRequest, name: string): Promise<Template> => {
    checkName(name);
    const { template } = await templates().getTemplate({ workspaceId: sessionOf(request).workspaceId, name }, rpcOptions(request)).catch((err: unknown) => {
      throw isMissing(err) ? missing() : err;
    });
    if (!template) throw missing();
    return template;
  };
  const layoutsOf = async (request: FastifyRequest): Promise<Template[]> =>
    (await templates().listTemplates({ workspaceId: sessionOf(request).workspaceId, kind: "layout", page: { limit: 100 } }, rpcOptions(request))).templates;

  // ---- The list and the create form ----

  async function listPage(request: FastifyRequest, flash?: Flash, create?: { values: CreateValues; error?: TemplateErrorMark }): Promise<string> {
    const session = sessionOf(request);
    const q = request.query as { kind?: unknown; cursor?: unknown };
    const kind = typeof q.kind === "string" && (KINDS as readonly string[]).includes(q.kind) ? (q.kind as Kind) : undefined;
    const cursor = typeof q.cursor === "string" ? q.cursor : "";
    if (cursor && !CURSOR.test(cursor)) throw refusal({ code: "invalid_cursor", status: 400, message: "This page of templates does not exist: start again from the first." });
    const opts = rpcOptions(request);
    const canCreate = mayPost(session, "/console/templates");
    const [res, layouts] = await Promise.all([
      templates().listTemplates({ workspaceId: session.workspaceId, kind: kind ?? "", page: { limit: PAGE_SIZE, cursor } }, opts),
      canCreate ? layoutsOf(request) : Promise.resolve([] as Template[]),
    ]);
    const body = templateListView({
      templates: res.templates, kind,
      nextCursor: res.page?.hasMore && res.page.nextCursor ? res.page.nextCursor : undefined,
      create: canCreate
        ? { csrf: csrfField(session), layouts, values: create?.values ?? { name: "", kind: kind ?? "template", format: "liquid", subject: "", html: "", layout: "" }, error: create?.error }
        : undefined,
    });
    return consolePage({ title: "Templates", session, active: "templates", flash, body: render(body) });
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
      const { template } = await templates().createTemplate({ workspaceId: session.workspaceId, template: input }, rpcOptions(request));
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
    const opts = rpcOptions(request);
    if (choice.contact && !/^ctc_[0-9a-z]{26}$/.test(choice.contact)) choice = { ...choice, contact: "" };
    const [preview, versions, contacts, layouts] = await Promise.all([
      renderPreview(request, t.name, choice),
      deps.clients.templates.listTemplateVersions({ workspaceId: session.workspaceId, name: t.name }, opts).then((r) => r.versions, () => [] as TemplateVersion[]),
      deps.clients.contacts.listContacts({ workspaceId: session.workspaceId, page: { limit: 50 } }, opts).then((r) => r.contacts, () => []),
      kind === "template" ? layoutsOf(request).catch(() => [] as Template[]) : Promise.resolve([] as Template[]),
    ]);
    const body = templateEditorView({
      template: t, choice, preview, versions, contacts, layouts, error: state.error,
      values: state.values ?? { subject: t.subject, previewText: t.previewText, html: bodyOf(t), text: t.text, layout: t.layout, format: formatOf(t) },
      csrf: csrfField(session), memberEmail: session.memberEmail ?? "",
      may: {
        save: mayPost(session, "/console/templates/:name"),
        livePreview: mayPost(session, "/console/templates/:name/preview"),
        test: mayPost(session, "/console/templates/:name/test"),
        restore: mayPost(session, "/console/templates/:name/versions/:version/restore"),
      },
    });
    return consolePage({ title: `Template ${t.name}`, session, active: "templates", flash: state.flash, body: render(body) });
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
      const { template } = await templates().updateTemplate({ workspaceId: session.workspaceId, template: input }, rpcOptions(request));
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
    return reply.header("cache-control", "no-store").type("application/json; charset=utf-8").send(JSON.stringify({ body: render(previewBody(t.name, result)) }));
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
