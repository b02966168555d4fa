import { describe, expect, it } from "vitest";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compile } from "../testing.js";
import { pixelFormFor } from "@mailroom/content/compile/snippets.js";

const html = (body: string) => `<html><body>${body}</body></html>`;
const compiledHtml = (source: string) =>
  compile({ html: source, trackOpens: true, kind: ContentKind.TRANSACTIONAL })
    .html!.segments.map((s) => (s.part.case === "literal" ? s.part.value : s.part.case === "openPixel" ? "«pixel»" : "«…»"))
    .join("");

describe("the open pixel's form", () => {
  it("is a beacon no filter counts as an image only for a short message without images of its own", () => {
    expect(pixelFormFor(html("<p>Your order #123 has shipped.</p>"))).toBe("beacon");
    expect(pixelFormFor(html('<p>Shipped.</p><img src="https://acme.test/logo.png" alt="Acme">'))).toBe("img");
    expect(pixelFormFor(html(`<p>${"Long newsletter text. ".repeat(200)}</p>`))).toBe("img");
  });

  it("reaches the compiled message in that form", () => {
    const short = compiledHtml(html("<p>Your order #123 has shipped.</p>"));
    expect(short).toContain("<!--[if mso]><img");
    expect(short).toContain("background-image:url('«pixel»')");
    const long = compiledHtml(html(`<p>${"Long newsletter text. ".repeat(200)}</p>`));
    expect(long).not.toContain("background-image");
    expect(long).toMatch(/<img src="«pixel»" width="1" height="1" alt=""[^>]*\/><\/body>/);
  });
});
