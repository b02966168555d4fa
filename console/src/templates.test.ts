import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountsService, ApiKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactSchema, ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { TemplateSchema, type CreateTemplateRequest, type Template, type UpdateTemplateRequest } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { TemplateService, TemplateVersionSchema, type RenderTemplateRequest, type TemplateVersion } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { EmailService, type SendEmailRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError } from "@mailroom/kit/errors.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";
import { schemeVariant } from "./views/template-editor.js";

/**
 * The Templates pages over an in-memory TemplateService keeping the template RPCs' contract: the
 * list with the sample templates, creating one, the editor beside its preview (RenderTemplate
 * with a contact and JSON values), a refused save marked at its line, the test send through
 * EmailService.SendEmail, restoring a version, and a read-only session that only looks.
 */
const WS = "ws_tpl";
const CONTACT = `ctc_${"a".repeat(26)}`;
const PLAIN: Record<string, { id: string; role: string; scopes: string[] }> = {
  mr_test_tpl_editor: { id: "key_editor", role: "EDITOR", scopes: ["api_user"] },
  mr_test_tpl_viewer: { id: "key_viewer", role: "VIEWER", scopes: ["api_read"] },
};
const AT = timestampFromDate(new Date(Date.UTC(2030, 0, 2, 9, 30)));

let templates: Map<string, Template>;
let versions: Map<string, TemplateVersion[]>;
let created: CreateTemplateRequest[];
let updatedReqs: UpdateTemplateRequest[];
let rendered: RenderTemplateRequest[];
let sent: SendEmailRequest[];

function keep(t: Template) {
  templates.set(t.name, t);
  const list = versions.get(t.name) ?? [];
  if (!list.some((v) => v.version === t.version)) list.unshift(create(TemplateVersionSchema, { version: t.version, subject: t.subject, html: t.html, text: t.text, format: t.format, createdAt: AT }));
  versions.set(t.name, list);
}

function reset() {
  templates = new Map();
  versions = new Map();
  created = [];
  updatedReqs = [];
  rendered = [];
  sent = [];
  keep(create(TemplateSchema, { id: "tpl_1", name: "welcome", subject: "Welcome, {{ firstName }}", html: "<p>Hi {{ firstName }}</p>", kind: "template", format: "liquid", version: 1, updatedAt: AT, fromEmail: "hello@acme.test", status: "ACTIVE" }));
  keep(create(TemplateSchema, { id: "tpl_2", name: "receipt", subject: "Your receipt", html: "<p>Total</p>", kind: "template", format: "liquid", version: 1, updatedAt: AT, status: "ACTIVE" }));
  keep(create(TemplateSchema, { id: "tpl_3", name: "frame", subject: "", html: "<main>{{ content }}</main>", kind: "layout", format: "liquid", version: 1, updatedAt: AT, status: "ACTIVE" }));
  keep(create(TemplateSchema, { id: "tpl_4", name: "footer", subject: "", html: "<small>bye</small>", kind: "snippet", format: "liquid", version: 1, updatedAt: AT, status: "ACTIVE" }));
}

const notFound = () => appError({ code: "template_not_found", httpStatus: 404, message: "Template not found" });
/** Enough Liquid for the pages: {{ firstName }} and its default, and a tag that does not close. */
function check(html: string) {
  const lines = html.split("\n");
  const i = lines.findIndex((l) => l.includes("{% if") && !html.includes("{% endif %}"));
  if (i >= 0) {
    throw appError({ code: "invalid_template", httpStatus: 400, message: `html, line ${i + 1}, column 3: tag if not closed`,
      extra: { field: '"html"', line: String(i + 1), column: "3", reason: '"tag if not closed"' } });
  }
}

const transport = memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      const k = PLAIN[req.apiKey];
      if (!k) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: WS, keyId: k.id, scopes: k.scopes };
    },
    getApiKey(req) {
      const k = Object.values(PLAIN).find((p) => p.id === req.keyId)!;
      return { apiKey: create(ApiKeySchema, { id: k.id, workspaceId: WS, name: k.id, role: k.role, scopes: k.scopes }) };
    },
    getWorkspace: () => ({ workspace: { id: WS, name: "Acme" } }),
  });
  service(ContactService, {
    listContacts: () => ({ contacts: [create(ContactSchema, { id: CONTACT, email: "ann@example.test", firstName: "Ann" })] }),
  });
  service(TeamService, { listMembers: () => ({ members: [] }) });
  service(TemplateService, {
    listTemplates(req) {
      expect(req.workspaceId).toBe(WS);
      return { templates: [...templates.values()].filter((t) => !req.kind || t.kind === req.kind), page: { hasMore: false } };
    },
    getTemplate(req) {
      const t = req.workspaceId === WS ? templates.get(req.name) : undefined;
      if (!t) throw notFound();
      return { template: t };
    },
    createTemplate(req) {
      created.push(req);
      const i = req.template!;
      if (templates.has(i.name)) throw appError({ code: "template_exists", httpStatus: 409, message: `A template named "${i.name}" already exists` });
      check(i.html);
      const { $typeName: _, ...fields } = i;
      const t = create(TemplateSchema, { ...fields, id: "tpl_new", version: 1, updatedAt: AT, replyTo: [] });
      keep(t);
      return { template: t };
    },
    updateTemplate(req) {
      updatedReqs.push(req);
      const i = req.template!;
      const old = templates.get(i.name);
      if (!old) throw notFound();
      check(i.html);
      if (old.html === i.html && old.subject === i.subject && old.text === i.text) return { template: old };
      const t = create(TemplateSchema, { ...old, subject: i.subject, html: i.html, text: i.text, layout: i.layout, version: old.version + 1 });
      keep(t);
      return { template: t };
    },
    renderTemplate(req) {
      rendered.push(req);
      const saved = templates.get(req.name);
      if (!saved) throw notFound();
      // A draft (the live preview) is checked as a save is, and rendered in the saved one's place.
      if (req.draft) check(req.draft.html);
      const t = req.draft ? create(TemplateSchema, { ...saved, subject: req.draft.subject, html: req.draft.html, text: req.draft.text }) : saved;
      const values = { ...(req.contactId === CONTACT ? { firstName: "Ann" } : {}), ...(req.variables ?? {}) } as Record<string, unknown>;
      if (t.html.includes("{{ boom }}")) throw appError({ code: "template_render_failed", httpStatus: 400, message: `Template "${t.name}" could not be rendered: over 1,000 loop iterations` });
      const merge = (s: string) => s.replace(/\{\{\s*firstName[^}]*\}\}/g, String(values.firstName ?? ""));
      return { subject: merge(t.subject), html: merge(t.html), text: merge(t.text) || "plain", previewText: "" };
    },
    listTemplateVersions(req) {
      if (!templates.has(req.name)) throw notFound();
      return { versions: versions.get(req.name) ?? [] };
    },
    restoreTemplateVersion(req) {
      if (!templates.has(req.name)) throw notFound();
      const old = versions.get(req.name)?.find((v) => v.version === req.version);
      if (!old) throw appError({ code: "template_version_not_found", httpStatus: 404, message: `Template "${req.name}" has no version ${req.version}` });
      const cur = templates.get(req.name)!;
      const t = create(TemplateSchema, { ...cur, subject: old.subject, html: old.html, version: cur.version + 1 });
      keep(t);
      return { template: t };
    },
  });
  service(EmailService, {
    sendEmail(req) {
      sent.push(req);
      return { email: { id: "trs_test1" } };
    },
  });
});

describe("console: templates, layouts and snippets", () => {
  let browser: ConsoleBrowser;

  beforeAll(async () => {
    browser = await consoleGateway(transport, {
      secret: "console-templates-test-secret-0123456789a", name: "console-templates-test", authCacheMs: 0,
    });
  });
  beforeEach(reset);

  async function signIn(apiKey: string): Promise<Jar> {
    const jar = new Jar();
    const page = await browser.get("/console/sign-in", jar);
    const res = await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey, next: "/console/templates" });
    expect(res.statusCode).toBe(303);
    return jar;
  }
  const row = (html: string, name: string) => new RegExp(`<tr data-template="${name}">[\\s\\S]*?</tr>`).exec(html)?.[0] ?? "";
  /** The light frame's email, without the colour-scheme lines put before it. */
  const srcdoc = (html: string) => /<iframe class="mail light" title="Preview of [^"]*" sandbox="" referrerpolicy="no-referrer" srcdoc="([^"]*)"/.exec(html)?.[1]
    ?.replace(/^&lt;meta name=&quot;color-scheme&quot; content=&quot;light&quot;&gt;&lt;style&gt;:root\{color-scheme:light\}&lt;\/style&gt;/, "");

  it("is in the nav and lists the sample templates, layouts and snippets with kind, format, version and update time", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates", jar);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/console/templates" aria-current="page">Templates</a>');
    expect(row(page.body, "welcome")).toContain('href="/console/templates/welcome"');
    expect(row(page.body, "welcome")).toContain(">Template<");
    expect(row(page.body, "welcome")).toContain("Liquid");
    expect(row(page.body, "welcome")).toContain('<time datetime="2030-01-02T09:30:00.000Z">2030-01-02 09:30 UTC</time>');
    expect(row(page.body, "receipt")).toBeTruthy();
    expect(row(page.body, "frame")).toContain(">Layout<");
    expect(row(page.body, "footer")).toContain(">Snippet<");
    expect(page.body).toContain('<form method="post" action="/console/templates" class="card">');
    // The Layouts tab asks the template service for layouts only.
    const layouts = await browser.get("/console/templates?kind=layout", jar);
    expect(row(layouts.body, "frame")).toBeTruthy();
    expect(row(layouts.body, "welcome")).toBe("");
    expect(layouts.body).toContain('<a href="/console/templates?kind=layout" aria-current="page">Layouts</a>');
    // Other pages link to it too.
    expect((await browser.get("/console/nowhere", jar)).body).toContain('<a href="/console/templates">Templates</a>');
  });

  it("creates a template from the example body and opens it in the editor", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates", jar);
    const res = await browser.post("/console/templates", jar, { _csrf: csrfOf(page.body), name: "promo", kind: "template", format: "liquid", subject: "Hello", html: "" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/templates/promo");
    expect(created[0]!.workspaceId).toBe(WS);
    expect(created[0]!.template).toMatchObject({ name: "promo", kind: "template", format: "liquid", subject: "Hello" });
    expect(created[0]!.template!.html).toContain('{{ firstName | default: "there" }}');
    const editor = await browser.get("/console/templates/promo", jar);
    expect(editor.body).toContain('Template &quot;promo&quot; created');
    expect(editor.body).toMatch(/<textarea id="html" name="html"[^>]*>/);
  });

  it("shows a refused create again with the line marked, and a taken name as a 409", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates", jar);
    const bad = await browser.post("/console/templates", jar, { _csrf: csrfOf(page.body), name: "broken", kind: "snippet", format: "liquid", html: "<p>a</p>\n{% if x %}" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('data-error-line="2"');
    expect(bad.body).toContain('<span class="err">2</span>');
    expect(bad.body).toContain("<strong>Line 2, column 3:</strong> tag if not closed</p>");
    expect(bad.body).toContain("&lt;p&gt;a&lt;/p&gt;\n{% if x %}</textarea>");
    const taken = await browser.post("/console/templates", jar, { _csrf: csrfOf(page.body), name: "welcome", kind: "template", subject: "x", html: "<p>x</p>" });
    expect(taken.statusCode).toBe(409);
    expect(taken.body).toContain("already exists");
  });

  it("shows the editor beside a sandboxed preview rendered with a sample contact and JSON values, at both widths", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get(`/console/templates/welcome?contact=${CONTACT}`, jar);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<textarea id="html" name="html" rows="20" wrap="off"');
    expect(page.body).toContain('<pre class="gutter" aria-hidden="true"><span>1</span></pre>');
    expect(srcdoc(page.body)).toBe("&lt;p&gt;Hi Ann&lt;/p&gt;");
    expect(page.body).not.toMatch(/sandbox="[^"]*allow-scripts/);
    expect(page.body).toContain('<dd data-preview-subject style="margin:0;font-weight:600">Welcome, Ann</dd>');
    expect(page.body).toContain('id="pw-mobile"><label for="pw-mobile">Phone (375 px)</label>');
    expect(page.body).toContain('id="pw-dark"><label for="pw-dark">Dark mode</label>');
    expect(page.body).toMatch(/<iframe class="mail dark" title="Preview of welcome in dark mode" sandbox="" referrerpolicy="no-referrer" loading="lazy" srcdoc="&lt;meta name=&quot;color-scheme&quot; content=&quot;dark&quot;&gt;/);
    expect(rendered.at(-1)).toMatchObject({ workspaceId: WS, name: "welcome", contactId: CONTACT });
    // JSON values are laid over the contact's.
    const withValues = await browser.get(`/console/templates/welcome?contact=${CONTACT}&variables=${encodeURIComponent('{"firstName":"Bo"}')}`, jar);
    expect(srcdoc(withValues.body)).toBe("&lt;p&gt;Hi Bo&lt;/p&gt;");
    // Values that are not a JSON object: said in the preview, nothing rendered, the page still works.
    const badJson = await browser.get(`/console/templates/welcome?variables=${encodeURIComponent("[1,")}`, jar);
    expect(badJson.statusCode).toBe(200);
    expect(badJson.body).toContain("The preview could not be made: The JSON values do not parse");
    // A render that fails is shown in place of the preview.
    templates.set("welcome", create(TemplateSchema, { ...templates.get("welcome")!, html: "{{ boom }}" }));
    const failing = await browser.get("/console/templates/welcome", jar);
    expect(failing.statusCode).toBe(200);
    expect(failing.body).toContain("over 1,000 loop iterations");
  });

  it("saves edits as a new version and shows the preview of what was saved, keeping the preview's values", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates/welcome", jar);
    const res = await browser.post("/console/templates/welcome", jar, {
      _csrf: csrfOf(page.body), subject: "Welcome!", previewText: "", html: "<h1>Hello {{ firstName }}</h1>", text: "", layout: "frame", format: "liquid",
      contact: CONTACT, variables: "",
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/templates/welcome?contact=${CONTACT}`);
    // What the editor does not show is kept (UpdateTemplate replaces the whole template).
    expect(updatedReqs[0]!.template).toMatchObject({ name: "welcome", kind: "template", subject: "Welcome!", html: "<h1>Hello {{ firstName }}</h1>", layout: "frame", fromEmail: "hello@acme.test", status: "ACTIVE" });
    const after = await browser.get(res.headers.location as string, jar);
    expect(after.body).toContain("Saved as version 2.");
    expect(srcdoc(after.body)).toBe("&lt;h1&gt;Hello Ann&lt;/h1&gt;");
    expect(after.body).toMatch(/<tr data-version="2"><td data-label="Version" class="num">2 <span class="muted">\(current\)<\/span>/);
    // Saving it unchanged makes no version.
    await browser.post("/console/templates/welcome", jar, { _csrf: csrfOf(after.body), subject: "Welcome!", html: "<h1>Hello {{ firstName }}</h1>", text: "", layout: "frame", format: "liquid" });
    expect(templates.get("welcome")!.version).toBe(2);
  });

  it("renders the editor's unsaved content for the live preview (JSON { body }), saving nothing; bad Liquid is shown at its line", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates/welcome", jar);
    expect(page.body).toContain('<form id="tpl-form" method="post" action="/console/templates/welcome" class="card" data-live-preview="/console/templates/welcome/preview">');
    expect(page.body).toContain('<div data-preview-body><dl class="grid"');
    expect(page.body).toContain("form[data-live-preview]");
    const res = await browser.post("/console/templates/welcome/preview", jar, {
      _csrf: csrfOf(page.body), subject: "Draft {{ firstName }}", previewText: "", html: "<h2>Typed {{ firstName }}</h2>", text: "", layout: "frame", format: "liquid",
      contact: CONTACT, variables: "",
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const body = JSON.parse(res.body).body as string;
    expect(srcdoc(body)).toBe("&lt;h2&gt;Typed Ann&lt;/h2&gt;");
    expect(body).toContain(">Draft Ann</dd>");
    expect(rendered.at(-1)).toMatchObject({ name: "welcome", contactId: CONTACT, draft: { subject: "Draft {{ firstName }}", html: "<h2>Typed {{ firstName }}</h2>", layout: "frame", format: "liquid", kind: "template" } });
    expect(updatedReqs).toHaveLength(0);
    expect(templates.get("welcome")!.version).toBe(1);
    const bad = await browser.post("/console/templates/welcome/preview", jar, { _csrf: csrfOf(page.body), subject: "x", html: "<p>a</p>\n{% if x %}", format: "liquid" });
    expect(bad.statusCode).toBe(200);
    expect(JSON.parse(bad.body).body).toContain("The preview could not be made: html, line 2, column 3: tag if not closed");
    // Without the session's token: refused, as every post.
    expect((await browser.post("/console/templates/welcome/preview", jar, { subject: "x", html: "<p>x</p>" })).statusCode).toBe(403);
  });

  it("refuses bad Liquid with the line marked in the editor and the typed content kept", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates/welcome", jar);
    const res = await browser.post("/console/templates/welcome", jar, {
      _csrf: csrfOf(page.body), subject: "Welcome", html: "<p>one</p>\n<p>two</p>\n{% if plan == 'pro' %}<p>pro</p>", text: "", format: "liquid",
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("Not saved: html, line 3, column 3: tag if not closed");
    expect(res.body).toContain('<div class="code-editor invalid" data-error-line="3" data-error-column="3">');
    expect(res.body).toContain("<span>1</span><span>2</span><span class=\"err\">3</span>");
    expect(res.body).toMatch(/<textarea id="html"[^>]*aria-invalid="true" aria-describedby="html-error">/);
    expect(res.body).toContain("{% if plan == &#39;pro&#39; %}&lt;p&gt;pro&lt;/p&gt;</textarea>");
    expect(templates.get("welcome")!.version).toBe(1);
  });

  it("sends a test through the send path with the preview's values", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    const page = await browser.get("/console/templates/welcome", jar);
    expect(page.body).toContain(`<form method="post" action="/console/templates/welcome/test" class="row">`);
    const res = await browser.post("/console/templates/welcome/test", jar, { _csrf: csrfOf(page.body), to: "me@acme.test", variables: '{"firstName":"Zed"}', contact: "" });
    expect(res.statusCode).toBe(303);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.workspaceId).toBe(WS);
    expect(sent[0]!.email!.to).toBe("me@acme.test");
    expect(sent[0]!.email!.content).toMatchObject({ case: "templated", value: { template: "welcome", variables: { firstName: "Zed" } } });
    expect((await browser.get(res.headers.location as string, jar)).body).toContain("Test email sent to me@acme.test (trs_test1).");
    // No address: nothing sent, and it says so.
    const none = await browser.post("/console/templates/welcome/test", jar, { _csrf: csrfOf(page.body), to: "" });
    expect((await browser.get(none.headers.location as string, jar)).body).toContain("Give one email address");
    // A snippet is not sent on its own (and has no test form).
    const snippet = await browser.get("/console/templates/footer", jar);
    expect(snippet.body).not.toContain("/console/templates/footer/test");
    expect(sent).toHaveLength(1);
  });

  it("lists versions and restores one as the newest version", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    let page = await browser.get("/console/templates/welcome", jar);
    await browser.post("/console/templates/welcome", jar, { _csrf: csrfOf(page.body), subject: "Second", html: "<p>two</p>", text: "", format: "liquid" });
    page = await browser.get("/console/templates/welcome", jar);
    expect(page.body).toContain('<button type="submit" class="secondary small" aria-label="Restore version 1">Restore</button>');
    expect(page.body).not.toContain('aria-label="Restore version 2"');
    const res = await browser.post("/console/templates/welcome/versions/1/restore", jar, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(303);
    expect(templates.get("welcome")).toMatchObject({ version: 3, html: "<p>Hi {{ firstName }}</p>" });
    expect((await browser.get(res.headers.location as string, jar)).body).toContain("Version 1 restored as version 3.");
    const missing = await browser.post("/console/templates/welcome/versions/9/restore", jar, { _csrf: csrfOf(page.body) });
    expect((await browser.get(missing.headers.location as string, jar)).body).toContain("Not restored:");
    expect((await browser.post("/console/templates/welcome/versions/abc/restore", jar, { _csrf: csrfOf(page.body) })).statusCode).toBe(404);
    expect((await browser.post("/console/templates/gone/versions/1/restore", jar, { _csrf: csrfOf(page.body) })).statusCode).toBe(404);
  });

  it("answers an unknown or malformed name with a 404 page and a post without CSRF with 403", async () => {
    const jar = await signIn("mr_test_tpl_editor");
    expect((await browser.get("/console/templates/nope", jar)).statusCode).toBe(404);
    expect((await browser.get("/console/templates/%3Cscript%3E", jar)).statusCode).toBe(404);
    const res = await browser.post("/console/templates/welcome", jar, { subject: "x", html: "<p>x</p>" });
    expect(res.statusCode).toBe(403);
    expect(updatedReqs).toHaveLength(0);
  });

  it("shows a read-only session the list, content and preview, without any form that changes or sends", async () => {
    const jar = await signIn("mr_test_tpl_viewer");
    const list = await browser.get("/console/templates", jar);
    expect(list.statusCode).toBe(200);
    expect(row(list.body, "welcome")).toBeTruthy();
    expect(list.body).not.toContain('action="/console/templates" class="card"');
    const page = await browser.get(`/console/templates/welcome?contact=${CONTACT}`, jar);
    expect(page.statusCode).toBe(200);
    expect(srcdoc(page.body)).toBe("&lt;p&gt;Hi Ann&lt;/p&gt;");
    expect(page.body).toMatch(/<textarea id="html" name="html"[^>]*readonly/);
    expect(page.body).toContain('<form id="preview-form" method="get" action="/console/templates/welcome">');
    expect(page.body).not.toMatch(/>(Save|Send test|Restore)<\/button>/);
    expect(page.body).not.toContain("data-live-preview");
    const csrf = csrfOf(page.body);
    for (const [url, form] of [
      ["/console/templates", { name: "x", subject: "x", html: "<p>x</p>" }],
      ["/console/templates/welcome", { subject: "x", html: "<p>x</p>" }],
      ["/console/templates/welcome/test", { to: "a@b.test" }],
      ["/console/templates/welcome/preview", { subject: "x", html: "<p>x</p>" }],
      ["/console/templates/welcome/versions/1/restore", {}],
    ] as const) {
      expect((await browser.post(url, jar, { _csrf: csrf, ...form })).statusCode, url).toBe(403);
    }
    expect(created).toHaveLength(0);
    expect(updatedReqs).toHaveLength(0);
    expect(sent).toHaveLength(0);
  });
});

describe("console: the preview's colour schemes", () => {
  const email = `<!DOCTYPE html><style>@media (prefers-color-scheme: dark){body{background:#000}} @media (prefers-color-scheme:light){body{background:#fff}}</style><p>Hi</p>`;
  it("decides the email's colour-scheme queries for the scheme shown and keeps the doctype first", () => {
    expect(schemeVariant(email, "dark")).toBe(`<!DOCTYPE html><meta name="color-scheme" content="dark"><style>:root{color-scheme:dark}</style><style>@media (min-width:0px){body{background:#000}} @media (max-width:-1px){body{background:#fff}}</style><p>Hi</p>`);
    expect(schemeVariant(email, "light")).toContain("@media (max-width:-1px){body{background:#000}} @media (min-width:0px){body{background:#fff}}");
    expect(schemeVariant("<p>x</p>", "light")).toBe(`<meta name="color-scheme" content="light"><style>:root{color-scheme:light}</style><p>x</p>`);
  });
});
