import { describe, expect, it } from "vitest";
import { PropertyType, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { newContactView } from "./contacts-new.js";

const HOSTILE = '<script>alert(1)</script>"';
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("add contact view", () => {
  it("escapes typed values, the error and its link, and the workspace's property names", () => {
    const props = [{ slug: `plan${HOSTILE}`, type: PropertyType.SELECT, builtIn: false, options: [{ value: HOSTILE }] }] as unknown as ContactProperty[];
    const page = newContactView(csrf, { email: HOSTILE, firstName: HOSTILE, lastName: "", subscribed: false, properties: `</textarea>${HOSTILE}` }, props, {
      field: "email", message: HOSTILE, link: { href: `/console/contacts/x"${HOSTILE}`, text: HOSTILE },
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('<div class="flash error" role="alert" id="nc-error">&lt;script&gt;alert(1)&lt;/script&gt;&quot; <a href="/console/contacts/x&quot;&lt;script&gt;');
    expect(page).toContain('name="email" type="email" required maxlength="512" autocomplete="off" spellcheck="false" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;" style="width:100%" aria-invalid="true" aria-describedby="nc-error">');
    expect(page).toContain('id="nc-first" name="firstName" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;" style="width:100%">');
    expect(page).toContain("<code>plan&lt;script&gt;alert(1)&lt;/script&gt;&quot;</code> (one option: &lt;script&gt;");
    expect(page).toContain(">&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;</textarea>");
    expect(page).toContain('value="no" checked>');
    expect(page).toContain(`novalidate>${csrf}`);
  });

  it("marks the properties field when the error is about it", () => {
    const page = newContactView(csrf, { email: "", firstName: "", lastName: "", subscribed: true, properties: "" }, [], { field: "properties", message: "bad" }).toString();
    expect(page).toContain('aria-describedby="nc-props-h nc-error" aria-invalid="true">');
    expect(page).toContain("This workspace has no custom properties yet.");
  });
});
