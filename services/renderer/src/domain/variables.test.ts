import { describe, expect, it } from "vitest";
import { detectVariables, findVariables, splitVariables } from "@mailroom/content/compile/variables.js";

describe("variables", () => {
  it("finds {{name}} with optional spaces in html, subject and preview text, in first-seen order", () => {
    const result = detectVariables({
      subject: "Hi {{firstName}}",
      previewText: "{{ plan }} news",
      html: '<p>{{ firstName }} {{company}}</p><a href="{{unsubscribeUrl}}">u</a>{{\n\tplan\n}}',
      customProperties: ["plan"],
    });
    expect(result).toEqual({ detected: ["firstName", "plan", "company", "unsubscribeUrl"], unknown: ["company"] });
  });

  it("knows built-ins, system values and custom slugs, case-sensitively", () => {
    const html = "{{firstName}}{{lastName}}{{email}}{{unsubscribeUrl}}{{manageUrl}}{{contactId}}{{plan}}{{Plan}}{{FirstName}}";
    expect(detectVariables({ html, subject: "", previewText: "", customProperties: ["plan"] }).unknown).toEqual(["Plan", "FirstName"]);
  });

  it("leaves non-identifiers alone", () => {
    expect(findVariables("{{ a.b }} {{a-b}} {{}} {{ }} {{1x}} {{#each}} {{a b}} { {x} } {{x}")).toEqual([]);
    expect(findVariables("{{{{x}}}} {{{y}}}")).toEqual(["x", "y"]);
  });

  it("splits text into literals and variables with offsets", () => {
    expect(splitVariables("a{{ x }}b{{y}}")).toEqual([
      { literal: "a" },
      { variable: "x", start: 1 },
      { literal: "b" },
      { variable: "y", start: 9 },
    ]);
    expect(splitVariables("")).toEqual([]);
  });

  it("stays fast on pathological brace and whitespace runs", () => {
    const junk = "{{" + " ".repeat(200_000) + "x" + "{".repeat(200_000) + "{{a".repeat(50_000);
    const started = performance.now();
    expect(findVariables(junk)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
