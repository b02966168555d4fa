import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { TemplateSchema } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { templateEditorView, templateListView } from "./templates.js";

const HOSTILE = '"><script>alert(1)</script>';

describe("templates views", () => {
  const t = create(TemplateSchema, { name: "welcome", displayName: HOSTILE, kind: "template", format: "liquid", version: 2, snippets: ["foot"] });

  it("escapes names in the list and what was typed into the create form", () => {
    const page = templateListView({
      templates: [t], nextCursor: "c1",
      create: { csrf: "", layouts: [create(TemplateSchema, { name: "base", displayName: HOSTILE, kind: "layout" })], values: { name: HOSTILE, kind: "template", format: "mjml", subject: HOSTILE, html: "</textarea><script>alert(1)</script>", layout: "base" } },
    }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain('<br><span class="muted">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</span>');
    expect(page).toContain('id="new-name" name="name" required maxlength="100" pattern="[A-Za-z0-9][A-Za-z0-9._\\-]*" value="&quot;&gt;&lt;script&gt;');
    expect(page).toContain('<option value="base" selected>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</option>');
    expect(page).toContain('<label for="new-layout">Layout</label><select id="new-layout" name="layout">');
    expect(page).toContain('&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;</textarea>');
    expect(page).toContain('<option value="mjml" selected>MJML</option>');
  });

  it("escapes the editor's content, the preview's srcdoc, the sample values and the error", () => {
    const page = templateEditorView({
      template: t, values: { subject: HOSTILE, previewText: "", html: "<p class='x'>&</p>", text: "", layout: "", format: "liquid" },
      error: { field: "html", line: 1, column: 2, message: HOSTILE },
      choice: { contact: "", variables: '{"a":"</textarea>"}' },
      preview: { ok: true, subject: HOSTILE, previewText: "", html: "<p>\"hi\"</p>", text: "t" },
      versions: [], contacts: [], layouts: [], csrf: "", memberEmail: 'a"b@x.test',
      may: { save: true, livePreview: true, test: true, restore: true },
    }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain('<input id="subject" name="subject" value="&quot;&gt;&lt;script&gt;');
    expect(page).toContain("&lt;p class=&#39;x&#39;&gt;&amp;&lt;/p&gt;</textarea>");
    expect(page).toContain("<strong>Line 1, column 2:</strong> &quot;&gt;&lt;script&gt;");
    expect(page).toContain("{&quot;a&quot;:&quot;&lt;/textarea&gt;&quot;}</textarea>");
    expect(page).toContain('name="variables" value="{&quot;a&quot;:&quot;&lt;/textarea&gt;&quot;}"');
    expect(page).toContain('value="a&quot;b@x.test"');
    expect(page).toMatch(/srcdoc="&lt;meta name=&quot;color-scheme&quot; content=&quot;light&quot;&gt;[^"]*&lt;p&gt;&quot;hi&quot;&lt;\/p&gt;"/);
    expect(page).toContain('data-live-preview="/console/templates/welcome/preview"');
    expect(page).toContain('renders <a href="/console/templates/foot"><code>foot</code></a>');
  });
});
