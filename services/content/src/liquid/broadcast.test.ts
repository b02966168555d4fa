import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compileMessage } from "../compile/compile.js";
import { mergeMessage, mergeMessageBytes, prepare } from "../merge.js";
import { parseClickToken } from "../tokens.js";
import { RenderFailure } from "./engine.js";
import { detectVariables } from "../compile/variables.js";

const CTX = { secret: "test-secret-0123456789abcdef", publicUrl: "https://mail.example.test" };
const broadcast = (html: string, extra: { subject?: string; text?: string } = {}) =>
  compileMessage(
    { html, subject: extra.subject ?? "News for {{ firstName | default: \"you\" }}", previewText: "", text: extra.text ?? "", trackClicks: true, trackOpens: true, kind: ContentKind.BROADCAST, contentId: "cmp_liquid", workspaceId: "ws_l" },
    CTX,
  );
const recipient = (email: string, variables: Record<string, unknown>) => ({ email, contactId: "ct_1", messageId: `${email}-m`, variables });

describe("a broadcast written in Liquid (rendered per recipient by the merge)", () => {
  const html =
    '<html><body><p>Hi {{ firstName | default: "there" }}</p>{% if plan == "pro" %}<p>Pro tip</p>{% endif %}' +
    '<ul>{% for p in picks limit: 2 %}<li><a href="https://shop.test/p/{{ p.slug }}">{{ p.name }}</a></li>{% endfor %}</ul></body></html>';

  it("compiles to its sources once and renders each contact, with footer, pixel and links tracked per recipient", () => {
    const compiled = broadcast(html);
    expect(compiled.liquid?.html).toBe(html);
    expect(compiled.links).toEqual([]);
    const ann = mergeMessage(compiled, recipient("ann@x.test", { firstName: "Ann", plan: "pro", picks: [{ slug: "a", name: "A" }, { slug: "b", name: "B" }, { slug: "c", name: "C" }] }), CTX);
    const bob = mergeMessage(compiled, recipient("bob@x.test", { plan: "free", picks: [{ slug: "z", name: "Z" }] }), CTX);
    expect(ann.subject).toBe("News for Ann");
    expect(bob.subject).toBe("News for you");
    expect(ann.html).toContain("<p>Hi Ann</p><p>Pro tip</p>");
    expect(bob.html).toContain("<p>Hi there</p><ul>");
    expect(bob.html).not.toContain("Pro tip");
    // Unsubscribe footer and open pixel on the rendered HTML.
    expect(ann.html).toContain(ann.unsubscribeUrl.replaceAll("&", "&amp;"));
    expect(ann.html).toMatch(/\/t\/o\//);
    // Each recipient's link tokens carry that recipient's URLs.
    const targets = (body: string) =>
      [...body.matchAll(/\/t\/c\/([A-Za-z0-9_.-]+)\//g)].map((m) => parseClickToken(CTX.secret, m[1]!)?.url);
    expect(targets(ann.html)).toEqual(["https://shop.test/p/a", "https://shop.test/p/b"]);
    expect(targets(bob.html)).toEqual(["https://shop.test/p/z"]);
    expect(ann.text).toMatch(/Hi Ann\s+Pro tip/);
    const bytes = mergeMessageBytes(compiled, recipient("ann@x.test", { firstName: "Ann" }), CTX);
    expect(bytes.html.bytes.toString("utf8")).toContain("<p>Hi Ann</p>");
  });

  it("refuses bad Liquid when compiled (scheduled) and fails one contact's render, not the others", () => {
    const err = (() => {
      try {
        broadcast("<p>\n{% if x %}</p>");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("invalid_template");
    expect((err as AppError).details.extra).toMatchObject({ line: "2", column: "1" });
    const compiled = broadcast("{% for i in items %}x{% endfor %}");
    expect(() => mergeMessage(compiled, recipient("a@x.test", { items: Array.from({ length: 1_001 }, () => 1) }), CTX)).toThrow(RenderFailure);
    expect(mergeMessage(compiled, recipient("b@x.test", { items: [1, 2] }), CTX).html).toContain("xx");
  });

  it("refuses a snippet ({% render %}) where it is written: a broadcast has none to render", () => {
    let err: unknown;
    try {
      broadcast('<p>Hi {{ firstName | default: "x" }}</p>\n  {% render "footer" %}');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("invalid_template");
    expect((err as AppError).details.extra).toMatchObject({ field: '"html"', line: "2", column: "3" });
    expect((err as AppError).message).toMatch(/cannot render "footer"/);
  });

  it("does not call a loop's item, an assign or a capture an unknown variable", () => {
    const found = detectVariables({
      html: "{% for p in picks %}{{ p }}{{ forloop }}{% endfor %}{% assign n = 2 %}{{ n }}{% capture c %}x{% endcapture %}{{ c }}{{ plan }}{{ other }}",
      subject: "",
      previewText: "",
      customProperties: ["plan"],
    });
    expect(found.unknown).toEqual(["other"]);
  });

  it("is compiled once: static links tracked and text generated at compile, each recipient one render", () => {
    const source =
      '<html><body><p>Hi {{ firstName | default: "there" }}</p><p><a href="https://acme.test/spring">Spring</a></p>' +
      '<ul>{% for p in picks %}<li><a href="https://shop.test/p/{{ p.slug }}?from={{ email }}">{{ p.name }}</a></li>{% endfor %}</ul>' +
      "{% if plan == 'pro' %}<p>Pro tip</p>{% endif %}<p>Bye</p></body></html>";
    const compiled = broadcast(source, { subject: "For {{ firstName | upcase }}" });
    expect(compiled.liquid?.compiled).toBe(true);
    expect(compiled.links.map((l) => l.url)).toEqual(["https://acme.test/spring"]);
    expect(compiled.textGenerated).toBe(true);
    // Merged by the compiled-once path, not the fallback that compiles each recipient.
    expect(prepare(compiled).constructor.name).toBe("CompiledLiquidMessage");
    const ann = mergeMessage(compiled, recipient("ann+x@x.test", { firstName: "Ann", plan: "pro", picks: [{ slug: "a", name: "A" }, { slug: "b&c", name: "B" }] }), CTX);
    expect(ann.subject).toBe("For ANN");
    const targets = (body: string) => [...body.matchAll(/\/t\/c\/([A-Za-z0-9_.-]+)\//g)].map((m) => parseClickToken(CTX.secret, m[1]!)?.url);
    expect(targets(ann.html)).toEqual(["https://acme.test/spring", "https://shop.test/p/a?from=ann%2Bx%40x.test", "https://shop.test/p/b&c?from=ann%2Bx%40x.test"]);
    expect(targets(ann.text)).toEqual(targets(ann.html));
    // The loop and the condition add no blank lines to the text; a false condition leaves none either.
    expect(ann.text).toMatch(/\n \* A \[[^\]]+\]\n \* B \[[^\]]+\]\n/);
    expect(ann.text).toMatch(/Pro tip\n\nBye/);
    const bob = mergeMessage(compiled, recipient("bob@x.test", { picks: [] }), CTX);
    expect(bob.html).toContain("<p>Hi there</p>");
    expect(bob.text).not.toMatch(/\n{3}/);
    expect(bob.text).toContain("Bye");
    expect(bob.html).toContain(bob.unsubscribeUrl.replaceAll("&", "&amp;"));
  });

  it("renders as a per-recipient compile of the rendered content did (links to the same targets)", () => {
    const compiled = broadcast(html);
    const before = { ...compiled, liquid: { ...compiled.liquid!, compiled: false } } as typeof compiled;
    const normal = (body: string) =>
      body.replace(/https:\/\/mail\.example\.test\/t\/c\/([A-Za-z0-9_.-]+)\/[A-Za-z0-9_.-]+/g, (_m, t: string) => `LINK(${parseClickToken(CTX.secret, t)?.url})`)
        .replace(/https:\/\/mail\.example\.test\/[^"\s\]]+/g, "OWN");
    for (const values of [{ firstName: "Ann <&>", plan: "pro", picks: [{ slug: "a b", name: "A & B" }] }, { plan: "free", picks: [] }]) {
      const now = mergeMessage(compiled, recipient("ann@x.test", values), CTX);
      const then = mergeMessage(before, recipient("ann@x.test", values), CTX);
      expect(normal(now.html)).toBe(normal(then.html));
      expect(now.subject).toBe(then.subject);
    }
  });

  it("takes no mark from a value: a contact's property cannot become a tracked link or a slot", () => {
    const compiled = broadcast('<p>{{ firstName }} {{ lastName | raw }} {{ city | escape }}</p><a href="https://acme.test/x">x</a>');
    const evil = "\u0002https://evil.test/\u0003\u00000\u0000";
    const m = mergeMessage(compiled, recipient("e@x.test", { firstName: evil, lastName: evil, city: evil }), CTX);
    expect(m.html).not.toContain("evil.test/\u0003");
    expect(m.html).toContain("<p>https://evil.test/0 https://evil.test/0 https://evil.test/0</p>");
  });

  it("writes a date in the contact's zone, else in the workspace's (compiled with the broadcast)", () => {
    const at = "2026-03-01T23:30:00Z";
    const compiled = compileMessage(
      { html: '<p>{{ at | date: "%Y-%m-%d %H:%M" }}</p>', subject: "S", previewText: "", text: "", trackClicks: false, trackOpens: false, kind: ContentKind.BROADCAST, contentId: "cmp_z", workspaceId: "ws_l", timeZone: "America/New_York" },
      CTX,
    );
    expect(mergeMessage(compiled, recipient("a@x.test", { at }), CTX).html).toContain("<p>2026-03-01 18:30</p>");
    expect(mergeMessage(compiled, recipient("b@x.test", { at, timezone: "Asia/Tokyo" }), CTX).html).toContain("<p>2026-03-02 08:30</p>");
    const utc = broadcast('<p>{{ at | date: "%H:%M" }}</p>');
    expect(mergeMessage(utc, recipient("c@x.test", { at }), CTX).html).toContain("<p>23:30</p>");
  });

  it("leaves content without Liquid to the byte merge", () => {
    expect(broadcast("<p>Hi {{firstName}}</p>", { subject: "Hi {{firstName}}" }).liquid).toBeUndefined();
  });
});
