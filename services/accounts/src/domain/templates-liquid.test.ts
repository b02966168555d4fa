import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { memoryDirectory, snapshot } from "../../../audience/src/testing.js";
import { TemplatePreviews } from "./template-previews.js";

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(() => undefined, (e) => e);
  if (!(err instanceof AppError)) throw new Error(`expected an AppError, got ${String(err)}`);
  return { code: err.code, status: err.httpStatus, message: err.message, extra: Object.fromEntries(Object.entries(err.details.extra ?? {}).map(([k, v]) => [k, JSON.parse(v)])) };
};

async function world() {
  const dir = await memoryDirectory();
  await dir.workspaces.create({ id: "ws_a", name: "A" });
  await dir.workspaces.create({ id: "ws_b", name: "B" });
  return dir;
}

describe("Liquid templates, layouts, snippets and versions (DESIGN §10.2)", () => {
  it("saves kinds, a layout and snippets, and says which need Liquid", async () => {
    const dir = await world();
    const plain = await dir.templates.create("ws_a", { name: "plain", subject: "Hi {{firstName}}", html: "<p>{{plan}}</p>" });
    expect(plain).toMatchObject({ kind: "template", format: "liquid", version: 1, liquid: false, snippets: [] });
    await dir.templates.create("ws_a", { name: "footer", kind: "snippet", subject: "", html: "<p>Bye {{ firstName }}</p>" });
    const base = await dir.templates.create("ws_a", { name: "base", kind: "layout", subject: "", html: '<div>{{ content }}</div>{% render "footer" %}' });
    expect(base).toMatchObject({ kind: "layout", snippets: ["footer"], liquid: true });
    const t = await dir.templates.create("ws_a", { name: "receipt", subject: "R", html: "<p>{{ order.id }}</p>", layout: "base" });
    expect(t).toMatchObject({ layout: "base", liquid: true });
    expect((await dir.templates.includes("ws_a", t)).map((x) => x.name)).toEqual(["base", "footer"]);
    expect((await dir.templates.list("ws_a", { kind: "template" })).items.map((x) => x.name)).toEqual(["plain", "receipt"]);
    expect((await dir.templates.list("ws_a", { kind: "snippet" })).items.map((x) => x.name)).toEqual(["footer"]);
  });

  it("refuses Liquid that does not parse, unknown snippets and layouts with 400 invalid_template, line and column, and writes nothing", async () => {
    const dir = await world();
    await dir.templates.create("ws_b", { name: "footer", kind: "snippet", subject: "", html: "<p>B</p>" });
    const before = await snapshot(dir);
    const unclosed = await refusal(dir.templates.create("ws_a", { name: "x", subject: "s", html: "<p>\n {% if a %}x" }));
    expect(unclosed).toMatchObject({ code: "invalid_template", status: 400, extra: { field: "html", line: 2, column: 2 } });
    expect(unclosed.message).toMatch(/^html, line 2, column 2: .*not closed/);
    expect((await refusal(dir.templates.create("ws_a", { name: "x", subject: "{{ a | nope }}", html: "h" }))).extra).toMatchObject({ field: "subject", line: 1, column: 1 });
    // Another workspace's snippet is not found.
    const snippet = await refusal(dir.templates.create("ws_a", { name: "x", subject: "s", html: 'a\n\n  {% render "footer" %}' }));
    expect(snippet).toMatchObject({ code: "invalid_template", extra: { line: 3, column: 3 } });
    expect((await refusal(dir.templates.create("ws_a", { name: "x", subject: "s", html: "h", layout: "nope" }))).message).toMatch(/not a layout/);
    expect((await refusal(dir.templates.create("ws_a", { name: "x", kind: "layout", subject: "", html: "<p>no content</p>" }))).message).toMatch(/content/);
    expect((await refusal(dir.templates.create("ws_a", { name: "x", kind: "nope", subject: "s", html: "h" }))).code).toBe("invalid_template");
    expect((await refusal(dir.templates.create("ws_a", { name: "x", subject: "", html: "h" }))).message).toMatch(/subject is required/);
    expect(await snapshot(dir)).toEqual(before);
  });

  it("keeps a version at every change and restores one as the newest", async () => {
    const dir = await world();
    await dir.templates.create("ws_a", { name: "t", subject: "One", html: "<p>1</p>" });
    const two = await dir.templates.update("ws_a", { name: "t", subject: "Two", html: "<p>2</p>" });
    expect(two.version).toBe(2);
    expect((await dir.templates.update("ws_a", { name: "t", subject: "Two", html: "<p>2</p>" })).version).toBe(2);
    expect((await dir.templates.versions("ws_a", "t")).map((v) => [v.version, v.subject])).toEqual([[2, "Two"], [1, "One"]]);
    const restored = await dir.templates.restore("ws_a", "t", 1);
    expect(restored).toMatchObject({ version: 3, subject: "One", html: "<p>1</p>" });
    expect((await refusal(dir.templates.restore("ws_a", "t", 7))).code).toBe("template_version_not_found");
    expect((await refusal(dir.templates.versions("ws_b", "t"))).code).toBe("template_not_found");
    expect((await refusal(dir.templates.update("ws_a", { name: "t", kind: "snippet", subject: "s", html: "h" }))).message).toMatch(/kind cannot change/);
  });

  it("renders a preview with a contact's values, its layout and snippets; a render over the limits is template_render_failed", async () => {
    const dir = await world();
    await dir.templates.create("ws_a", { name: "footer", kind: "snippet", subject: "", html: "<small>{{ email }}</small>" });
    await dir.templates.create("ws_a", { name: "base", kind: "layout", subject: "", html: '<main>{{ content }}</main>{% render "footer" %}' });
    await dir.templates.create("ws_a", {
      name: "t",
      layout: "base",
      subject: "Hi {{ firstName | default: 'there' }}",
      html: '<p>{% if plan == "pro" %}Pro{% else %}Free{% endif %} <a href="{{ unsubscribeUrl }}">u</a></p>',
    });
    const { contact } = await dir.contacts.upsert("ws_a", { email: "kim@x.test", firstName: "Kim", properties: { plan: "pro" } }, { createMissingProperties: true });
    const previews = new TemplatePreviews(dir.templates, dir.contacts, dir.workspaces);
    expect(await previews.render("ws_a", "t", {})).toEqual({
      subject: "Hi there",
      html: '<main><p>Free <a href="#">u</a></p></main><small></small>',
      text: "Free u",
      previewText: "",
    });
    const forKim = await previews.render("ws_a", "t", {}, contact._id);
    expect(forKim.subject).toBe("Hi Kim");
    expect(forKim.html).toBe('<main><p>Pro <a href="#">u</a></p></main><small>kim@x.test</small>');
    const loop = await dir.templates.create("ws_a", { name: "loop", subject: "s", html: "{% for i in items %}{{ i }}{% endfor %}" });
    expect(loop.liquid).toBe(true);
    expect((await refusal(previews.render("ws_a", "loop", { items: Array.from({ length: 1_001 }, () => 1) }))).code).toBe("template_render_failed");
    expect((await refusal(previews.render("ws_b", "t", {}))).code).toBe("template_not_found");
  });

  it("renders unsaved content (a draft) as a save would check it, storing nothing; another workspace's pieces are not found", async () => {
    const dir = await world();
    await dir.templates.create("ws_a", { name: "footer", kind: "snippet", subject: "", html: "<small>{{ email }}</small>" });
    await dir.templates.create("ws_a", { name: "base", kind: "layout", subject: "", html: '<main>{{ content }}</main>{% render "footer" %}' });
    await dir.templates.create("ws_a", { name: "t", subject: "Saved", html: "<p>saved</p>" });
    await dir.templates.create("ws_b", { name: "bfoot", kind: "snippet", subject: "", html: "<p>B</p>" });
    const before = await snapshot(dir);
    const previews = new TemplatePreviews(dir.templates, dir.contacts, dir.workspaces);
    const draft = await dir.templates.draft("ws_a", "t", { subject: "Hi {{ n | default: 'you' }}", html: "<p>{% for i in xs %}{{ i }}{% endfor %}</p>", layout: "base" });
    expect(await previews.render("ws_a", "t", { xs: [1, 2], email: "a@x.test" }, undefined, draft)).toMatchObject({
      subject: "Hi you", html: "<main><p>12</p></main><small>a@x.test</small>",
    });
    // Without a name: a new template's content; MJML compiled first.
    const mjml = await dir.templates.draft("ws_a", "", { subject: "M", html: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{ n }}</mj-text></mj-column></mj-section></mj-body></mjml>", format: "mjml" });
    expect((await previews.render("ws_a", "", { n: "Kim" }, undefined, mjml)).html).toMatch(/<!doctype html>[\s\S]*Hi Kim/i);
    const bad = await refusal(dir.templates.draft("ws_a", "t", { subject: "s", html: "<p>\n  {% if x %}" }));
    expect(bad).toMatchObject({ code: "invalid_template", status: 400, extra: { field: "html", line: 2, column: 3 } });
    expect((await refusal(dir.templates.draft("ws_a", "", { subject: "s", html: '{% render "bfoot" %}' }))).code).toBe("invalid_template");
    expect((await refusal(dir.templates.draft("ws_b", "t", { subject: "s", html: "h" }))).code).toBe("template_not_found");
    expect(await snapshot(dir)).toEqual(before);
    expect((await previews.render("ws_a", "t", {})).subject).toBe("Saved");
  });

  it("deletes a template's versions with it, and keeps a layout or snippet another template uses (409 naming them)", async () => {
    const dir = await world();
    await dir.templates.create("ws_a", { name: "footer", kind: "snippet", subject: "", html: "<small>bye</small>" });
    await dir.templates.create("ws_a", { name: "base", kind: "layout", subject: "", html: '<main>{{ content }}</main>{% render "footer" %}' });
    await dir.templates.create("ws_a", { name: "receipt", subject: "R", html: "<p>r</p>", layout: "base" });
    await dir.templates.create("ws_a", { name: "welcome", subject: "W", html: '<p>w</p>{% render "footer" %}' });
    await dir.templates.update("ws_a", { name: "welcome", subject: "W2", html: '<p>w2</p>{% render "footer" %}' });
    // Another workspace's template of the same names is no user.
    await dir.templates.create("ws_b", { name: "lone", kind: "snippet", subject: "", html: "<p>b</p>" });
    await dir.templates.create("ws_b", { name: "t", subject: "s", html: '{% render "lone" %}' });
    const versions = dir.store.collection("template_versions");
    expect(await versions.countDocuments({ workspaceId: "ws_a" })).toBe(5);

    const footer = await refusal(dir.templates.delete("ws_a", "footer"));
    expect(footer).toMatchObject({ code: "template_in_use", status: 409, extra: { usedBy: ["base", "welcome"] } });
    expect(footer.message).toMatch(/snippet "footer" is used by "base", "welcome"/);
    expect((await refusal(dir.templates.delete("ws_a", "base")))).toMatchObject({ code: "template_in_use", extra: { usedBy: ["receipt"] } });

    const welcome = await dir.templates.get("ws_a", "welcome");
    await dir.templates.delete("ws_a", "welcome");
    expect(await versions.countDocuments({ workspaceId: "ws_a", templateId: welcome._id })).toBe(0);
    // A template no longer rendering the snippet frees it once the layout is gone too.
    await dir.templates.update("ws_a", { name: "receipt", subject: "R", html: "<p>r</p>", layout: "" });
    await dir.templates.delete("ws_a", "base");
    await dir.templates.delete("ws_a", "footer");
    expect((await dir.templates.list("ws_a")).items.map((t) => t.name)).toEqual(["receipt"]);
    expect(await versions.countDocuments({ workspaceId: "ws_a" })).toBe(2);
    expect(await versions.countDocuments({ workspaceId: "ws_b" })).toBe(2);
  });
});
