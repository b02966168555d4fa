import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CompiledMessageSchema, ContentKind } from "../../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { mergeMessage } from "@mailroom/content/merge.js";
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
});
