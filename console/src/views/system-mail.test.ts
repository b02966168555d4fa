import { describe, expect, it } from "vitest";
import { systemMailHtml } from "./system-mail.js";

describe("system mail view", () => {
  it("escapes the paragraphs, the link and the button", () => {
    const mail = systemMailHtml(['Acme <script>alert(1)</script> invited you', "Plain"], 'https://x.test/?a=1&b="2"', "Go <now>");
    expect(mail).not.toContain("<script>");
    expect(mail).toContain("<p>Acme &lt;script&gt;alert(1)&lt;/script&gt; invited you</p><p>Plain</p>");
    expect(mail).toContain('<a href="https://x.test/?a=1&amp;b=&quot;2&quot;" style=');
    expect(mail).toContain(">Go &lt;now&gt;</a>");
    expect(mail).toContain("Or open this address: https://x.test/?a=1&amp;b=&quot;2&quot;</p>");
  });
});
