import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { CompiledMessageSchema } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessage, prepare, stringifyValue } from "@mailroom/content/merge.js";
import { compile, CTX, RECIPIENT, render } from "../testing.js";
import { trackingUrls } from "@mailroom/content/tokens.js";

describe("merge", () => {
  it("HTML-escapes values in HTML, keeps them raw in text and subject", () => {
    const { merged } = render(
      { html: '<p title="{{firstName}}">{{firstName}}</p>', subject: "{{firstName}}", text: "{{firstName}}" },
      { variables: { firstName: `<b>"Tom" & 'Jerry'</b>` } },
    );
    expect(merged.html).toBe('<p title="&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;">&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;</p>');
    expect(merged.text).toBe(`<b>"Tom" & 'Jerry'</b>`);
    expect(merged.subject).toBe(`<b>"Tom" & 'Jerry'</b>`);
  });

  it("renders a missing known variable as empty and never reads inherited properties", () => {
    const { merged } = render({ html: "[{{lastName}}][{{plan}}][{{constructor}}][{{toString}}]" }, { variables: {} });
    expect(merged.html).toBe("[][][][]");
  });

  it("computes system values and ignores caller-supplied ones", () => {
    const { merged } = render(
      { html: "{{email}}|{{contactId}}|{{unsubscribeUrl}}|{{manageUrl}}" },
      { variables: { email: "spoof@x.test", contactId: "ct_spoof", unsubscribeUrl: "https://evil.test" } },
    );
    const urls = trackingUrls(CTX.publicUrl, merged.recipientToken);
    expect(merged.html).toBe(`ann@example.test|ct_ann|${urls.unsubscribe}|${urls.manage}`);
    expect(merged.listUnsubscribeUrl).toBe(urls.unsubscribe);
  });

  it("folds line breaks of values in subject and preview text (no header injection)", () => {
    const { merged } = render(
      { html: "x", subject: "Hi {{firstName}}", previewText: "{{firstName}}!" },
      { variables: { firstName: "Ann\r\nBcc: victim@x.test" } },
    );
    expect(merged.subject).toBe("Hi Ann Bcc: victim@x.test");
    expect(merged.previewText).toBe("Ann Bcc: victim@x.test!");
  });

  it("stringifies numbers, booleans, dates, lists and objects", () => {
    expect(stringifyValue(42)).toBe("42");
    expect(stringifyValue(NaN)).toBe("");
    expect(stringifyValue(false)).toBe("false");
    expect(stringifyValue(null)).toBe("");
    expect(stringifyValue(new Date("2030-01-02T03:04:05Z"))).toBe("2030-01-02T03:04:05.000Z");
    expect(stringifyValue(["a", 1])).toBe("a, 1");
    expect(stringifyValue({ a: 1 })).toBe('{"a":1}');
  });

  it("prepares a compiled message once and follows a publicUrl change", () => {
    const compiled = compile({ html: '<a href="https://x.test">x</a>', trackOpens: true });
    expect(prepare(compiled)).toBe(prepare(compiled));
    const other = mergeMessage(compiled, RECIPIENT, { ...CTX, publicUrl: "https://other.test/" });
    expect(other.html).toContain('href="https://other.test/t/c/');
    expect(other.html).toContain('src="https://other.test/t/o/');
    expect(mergeMessage(compiled, RECIPIENT, CTX).html).toContain(`href="${CTX.publicUrl}/t/c/`);
  });

  it("refuses a compiled message that points at a link it does not have", () => {
    const bad = create(CompiledMessageSchema, { html: { segments: [{ part: { case: "link", value: 2 } }] }, links: [] });
    expect(() => mergeMessage(bad, RECIPIENT, CTX)).toThrow(RangeError);
  });

  it("merges an empty compiled message to empty strings", () => {
    const merged = mergeMessage(create(CompiledMessageSchema, {}), RECIPIENT, CTX);
    expect(merged).toMatchObject({ subject: "", html: "", text: "", previewText: "" });
  });
});
