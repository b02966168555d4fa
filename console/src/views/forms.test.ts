import { describe, expect, it } from "vitest";
import type { Form } from "@mailroom/proto/audience/v1/forms_pb.js";
import { formListView, formView, type FormValues } from "./forms.js";
import { parseForm } from "../pages/forms.js";

const HOSTILE = '<script>alert(1)</script>"';
const csrf = '<input type="hidden" name="_csrf" value="t">';
const form = {
  id: "frm_01", name: `Join${HOSTILE}`, doubleOptIn: true, groups: ["grp_1"], topics: [],
  fields: [{ name: "email", label: "Email", required: true }, { name: "plan", label: `Plan${HOSTILE}`, required: false }],
} as unknown as Form;
const values: FormValues = {
  name: form.name, fields: [{ name: "plan", label: HOSTILE, required: true }], groups: ["grp_1"], topics: [], doubleOptIn: true,
  redirectUrl: `https://x.test/${HOSTILE}`, fromEmail: "", fromName: HOSTILE, confirmTemplate: "",
};
const ctx = { fields: [{ name: "plan", label: `Plan${HOSTILE}`, type: "string" }], groups: [{ id: "grp_1", publicId: "p", displayName: `G${HOSTILE}` }] as never, topics: [] };

describe("signup forms views", () => {
  it("escapes names, labels and typed values on the form's page, the snippets escaped once more inside <pre>", () => {
    const page = formView({ form, values, ctx, publicUrl: "https://mail.test", canEdit: true, csrf }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain("<h1>Join&lt;script&gt;alert(1)&lt;/script&gt;&quot;</h1>");
    expect(page).toContain("joins groups: G&lt;script&gt;");
    expect(page).toContain('aria-label="Label of Plan&lt;script&gt;alert(1)&lt;/script&gt;&quot;" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(page).toContain('id="f-redirectUrl" name="redirectUrl" value="https://x.test/&lt;script&gt;alert(1)&lt;/script&gt;&quot;" style="width:100%" type="url"');
    expect(page).toContain('data-confirm="Delete the form Join&lt;script&gt;alert(1)&lt;/script&gt;&quot;? Its link');
    // The snippet's own escaping (&lt;) is escaped again to show as text.
    expect(page).toContain("Plan&amp;lt;script&amp;gt;alert(1)&amp;lt;/script&amp;gt;&amp;quot;");
    expect(page).toContain('<pre id="snippet-html" aria-labelledby="snippet-html-h">&lt;form action=&quot;https://mail.test/f/frm_01&quot; method=&quot;post&quot;&gt;');
    expect(page).toContain('value="grp_1" checked>');
  });

  it("escapes the list, and shows no New form button to a viewer", () => {
    const page = formListView({ forms: [form], canEdit: false }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(">Join&lt;script&gt;alert(1)&lt;/script&gt;&quot;</a>");
    expect(page).toContain("<code>email</code>, <code>plan</code>");
    expect(page).not.toContain("New form");
  });

  it("checks the editor with the schema of POST /v1/forms", () => {
    const refused = parseForm({ ...values, name: "" });
    expect(refused).toMatchObject({ ok: false, flash: { kind: "error", status: 400, message: "name: name is required" } });
    const ok = parseForm(values);
    expect(ok.ok && ok.input.form.fields).toEqual([{ name: "email", label: "Email", required: true }, { name: "plan", label: HOSTILE, required: true }]);
    expect(ok.ok && ok.input.updateFields.sort()).toEqual(["confirmTemplate", "doubleOptIn", "fields", "fromEmail", "fromName", "groups", "name", "redirectUrl", "topics"]);
  });
});
