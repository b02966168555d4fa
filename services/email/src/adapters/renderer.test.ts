import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CompiledMessageSchema, ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessage } from "@mailroom/content/merge.js";
import { rawLiquidKey } from "@mailroom/content/liquid/raw.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { InProcessRenderer } from "./renderer.js";

const settings = { secret: "renderer-adapter-test-secret", publicUrl: "https://mail.example.test" };
const input = {
  workspaceId: "ws_acme", contentId: "trs_1", subject: "Welcome", html: "<body><p>Hi {{firstName}}</p></body>", text: "", previewText: "",
  trackClicks: false, trackOpens: false, literal: false,
};

async function compiled(automation: boolean | undefined) {
  const message = fromBinary(CompiledMessageSchema, await new InProcessRenderer(settings).compile({ ...input, automation }));
  return { message, merged: mergeMessage(message, { email: "pia@example.test", messageId: "m1@acme.test", variables: { firstName: "Pia" } }, settings) };
}

describe("InProcessRenderer", () => {
  it("compiles an automation's email with the unsubscribe footer (its kind tells delivery to add List-Unsubscribe)", async () => {
    const { message, merged } = await compiled(true);
    expect(message.kind).toBe(ContentKind.AUTOMATION);
    expect(message.unsubscribeFooterAdded).toBe(true);
    expect(merged.html).toContain(`href="${merged.unsubscribeUrl}"`);
  });

  it("compiles an API email as transactional: no footer", async () => {
    for (const automation of [undefined, false]) {
      const { message, merged } = await compiled(automation);
      expect(message.kind).toBe(ContentKind.TRANSACTIONAL);
      expect(message.unsubscribeFooterAdded).toBe(false);
      expect(merged.html).not.toContain(merged.unsubscribeUrl);
    }
  });

  describe("a raw email's Liquid (DESIGN §10.2)", () => {
    const rawInput = (fields: { subject?: string; html: string; text?: string }, variables: Record<string, unknown>) => {
      const source = { subject: fields.subject ?? "Hi", html: fields.html, text: fields.text ?? "", previewText: "" };
      return {
        ...input, ...source, literal: false, trackClicks: true,
        liquid: { template: { name: "", ...source, liquidKey: rawLiquidKey(source) }, variables, email: "ann@example.test", raw: true },
      };
    };
    const merge = (message: ReturnType<typeof fromBinary<typeof CompiledMessageSchema>>) =>
      mergeMessage(message, { email: "ann@example.test", messageId: "m1@acme.test", variables: {} }, settings);

    it("renders subject, HTML and text with the email's values; a link holding a value is tracked with that URL", async () => {
      const message = fromBinary(CompiledMessageSchema, await new InProcessRenderer(settings).compile(rawInput({
        subject: "Order {{ order.id }} for {{ name | default: 'you' }}",
        html: '<p>{% for i in order.items %}<b>{{ i }}</b>{% endfor %}</p>{% if plan == "pro" %}<a href="https://acme.test/o?id={{ order.id }}">pro</a>{% endif %}',
        text: "Hi {{ name | upcase }}",
      }, { name: "ann", plan: "pro", order: { id: "A 1", items: ["x", "<y>"] } })));
      const merged = merge(message);
      expect(merged.subject).toBe("Order A 1 for ann");
      expect(merged.html).toContain("<p><b>x</b><b>&lt;y&gt;</b></p>");
      expect(merged.text).toBe("Hi ANN");
      const href = /href="([^"]+)"/.exec(merged.html)![1]!;
      expect(href).toContain("/t/c/"); // tracked, its token carrying the merged URL
    });

    it("refuses bad Liquid with 400 invalid_template, its field, line and column", async () => {
      const err = await new InProcessRenderer(settings).compile(rawInput({ html: "<p>\n{% if x %}open" }, {})).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "invalid_template", httpStatus: 400 });
      expect(errorInfoOf(err)!.extra).toMatchObject({ field: '"html"', line: "2", column: "1" });
      const filter = await new InProcessRenderer(settings).compile(rawInput({ subject: "{{ x | nope }}", html: "<p>x</p>" }, {})).catch((e: unknown) => e);
      expect(filter).toMatchObject({ code: "invalid_template", httpStatus: 400 });
      expect(errorInfoOf(filter)!.extra).toMatchObject({ field: '"subject"' });
    });

    it("fails a render over the loop limit with 400 template_render_failed", async () => {
      const err = await new InProcessRenderer(settings)
        .compile(rawInput({ html: "{% for i in (1..5000) %}x{% endfor %}" }, {}))
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "template_render_failed", httpStatus: 400 });
    });
  });
});
