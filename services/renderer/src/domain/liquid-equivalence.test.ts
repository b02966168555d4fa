import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compileMessage, type CompileInput } from "@mailroom/content/compile/compile.js";
import { mergeMessage } from "@mailroom/content/merge.js";
import { ParsedTemplate } from "@mailroom/content/liquid/template.js";
import { usesLiquid } from "@mailroom/content/liquid/engine.js";
import { devBootstrap } from "../../../../deploy/dev-workspace.js";
import { buildNewsletter } from "../fixtures/newsletter.js";
import { CTX } from "../testing.js";

/**
 * Content written for the `{{name}}` merge renders exactly as before through the Liquid engine
 * (DESIGN §10.2): every fixture and sample, compiled and merged the old way, against rendered
 * by Liquid for the recipient and then compiled with only the system values left to merge.
 */
interface Sample {
  name: string;
  html: string;
  subject: string;
  previewText?: string;
  text?: string;
  /** Its links hold no variable: tracked alike both ways (Liquid tracks a link holding a value with the merged URL). */
  trackable?: boolean;
}

const digest = readFileSync(new URL("../fixtures/digest.html", import.meta.url), "utf8");
const samples: Sample[] = [
  { name: "newsletter (bench fixture)", ...buildNewsletter() },
  { name: "digest.html", html: digest, subject: "Digest for {{ firstName }}", previewText: "Your {{ plan }} week" },
  ...devBootstrap("mr_test_x").workspaces[0]!.templates.map((t) => ({ ...t, name: `dev workspace: ${t.name}`, trackable: true })),
  {
    name: "escaping, lists, objects, numbers, unquoted attributes, text part",
    html: '<p title={{firstName}}>{{ firstName }} {{tags}} {{meta}} {{seats}} {{missing}}</p><img alt={{lastName}} src="https://x.test/i.png">',
    subject: "{{firstName}} ({{seats}})",
    previewText: "{{lastName}}",
    text: "Hi {{firstName}}, {{tags}} {{meta}}\n{{unsubscribeUrl}}",
    trackable: true,
  },
  {
    name: "variables in hrefs: path, query, fragment and system links",
    html: '<a href="https://x.test/u/{{firstName}}?e={{email}}&p={{plan}}#{{lastName}}">me</a> <a href="{{unsubscribeUrl}}">unsub</a> <a href="https://x.test/m?u={{manageUrl}}">m</a> <a href="https://plain.test/a">plain</a>',
    subject: "Links",
  },
];

const values = {
  firstName: `Ann <"O'Neil"> & co`,
  lastName: "Lee Smith",
  plan: "pro+team",
  company: "Acme & Sons",
  city: "Zürich",
  country: "CH",
  orderCount: 12,
  couponCode: "SAVE10",
  orderId: "A-1042",
  amount: "$12.00",
  seats: 3.5,
  tags: ["a", "b"],
  meta: { k: "v", n: [1, 2] },
  subjectBreak: "x\r\ny",
};
const recipient = { email: "ann+tag@example.test", contactId: "ct_1", messageId: "m1@x.test" };

function base(s: Sample, kind: ContentKind, trackClicks: boolean): Omit<CompileInput, "html" | "subject" | "previewText" | "text"> {
  return { trackClicks, trackOpens: true, kind, contentId: "cmp_equiv", workspaceId: "ws_equiv", literal: false };
}

function merged(s: Sample, kind: ContentKind, trackClicks: boolean) {
  const compiled = compileMessage({ ...base(s, kind, trackClicks), html: s.html, subject: s.subject, previewText: s.previewText ?? "", text: s.text ?? "" }, CTX);
  return mergeMessage(compiled, { ...recipient, variables: values }, CTX);
}

function liquid(s: Sample, kind: ContentKind, trackClicks: boolean) {
  const rendered = ParsedTemplate.parse({
    key: s.name,
    fields: { html: s.html, subject: s.subject, previewText: s.previewText ?? "", text: s.text ?? "" },
  }).render(values, { email: recipient.email });
  const compiled = compileMessage({ ...base(s, kind, trackClicks), ...rendered, systemVariablesOnly: true }, CTX);
  return mergeMessage(compiled, { ...recipient, variables: {} }, CTX);
}

describe("content written for the {{name}} merge renders the same through Liquid", () => {
  for (const s of samples) {
    it(s.name, () => {
      // These samples are what the byte merge keeps serving (no Liquid needed) …
      expect(usesLiquid(s.html, s.subject, s.previewText ?? "", s.text ?? "")).toBe(false);
      // … and the Liquid engine renders them byte for byte alike, for every kind.
      for (const kind of [ContentKind.TRANSACTIONAL, ContentKind.BROADCAST]) {
        for (const track of s.trackable ? [false, true] : [false]) {
          const before = merged(s, kind, track);
          const after = liquid(s, kind, track);
          // A generated text part wraps its lines at the rendered values' lengths (the merge wrapped
          // around the `{{name}}` slots): the same words, line breaks aside.
          const words = (t: string) => (s.text ? t : t.replace(/\s+/g, " "));
          expect({ subject: after.subject, previewText: after.previewText, text: words(after.text) }).toEqual({
            subject: before.subject,
            previewText: before.previewText,
            text: words(before.text),
          });
          expect(after.html).toBe(before.html);
          expect(after.unsubscribeUrl).toBe(before.unsubscribeUrl);
        }
      }
    });
  }

  it("a link holding a value is tracked with that recipient's URL", () => {
    const s = samples.find((x) => x.name.startsWith("variables in hrefs"))!;
    const rendered = ParsedTemplate.parse({ key: "t", fields: { html: s.html, subject: s.subject, previewText: "", text: "" } }).render(values, { email: recipient.email });
    const compiled = compileMessage({ ...base(s, ContentKind.TRANSACTIONAL, true), ...rendered, systemVariablesOnly: true }, CTX);
    expect(compiled.links.map((l) => l.url)).toEqual([
      "https://x.test/u/Ann <\"O'Neil\"> & co?e=ann%2Btag%40example.test&p=pro%2Bteam#Lee%20Smith",
      "https://plain.test/a",
    ]);
  });
});
