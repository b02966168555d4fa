import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CompiledMessageSchema, ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { buildMail } from "../domain/message.js";
import { testJob } from "../testing.js";
import { RendererMerger } from "./merger.js";

const ctx = { secret: "merger-test-secret", publicUrl: "https://mail.example.test" };
const recipient = { email: "pia@example.test", contactId: "", messageId: "m1@acme.test", variables: {} };
const sender = { allowed: true, address: "team@acme.test", name: "" };

/** The headers delivery writes for content of this kind sent as a transactional job (an email service email). */
function headersOf(kind: ContentKind) {
  const compiled = create(CompiledMessageSchema, { kind, workspaceId: "ws_test", contentId: "trs_1" });
  const merged = new RendererMerger().merge(compiled, recipient, ctx);
  return { merged, headers: Object.fromEntries(buildMail(testJob(), merged, sender).headers.map((h) => [h.key, h.value])) };
}

describe("RendererMerger", () => {
  it("marks automation and broadcast content as offering an unsubscribe, transactional content not", () => {
    const automation = headersOf(ContentKind.AUTOMATION);
    expect(automation.merged.offersUnsubscribe).toBe(true);
    // The one-click URL is the merge's own unsubscribe URL (the recipient's signed token).
    expect(automation.headers["List-Unsubscribe"]).toMatch(/^<https:\/\/mail\.example\.test\/u\/[^>]+>, <mailto:unsubscribe[+@]/);
    expect(automation.headers["List-Unsubscribe"]).toContain(`<${automation.merged.listUnsubscribeUrl}>`);
    expect(automation.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    expect(headersOf(ContentKind.BROADCAST).merged.offersUnsubscribe).toBe(true);

    const transactional = headersOf(ContentKind.TRANSACTIONAL);
    expect(transactional.merged.offersUnsubscribe).toBe(false);
    expect(transactional.headers["List-Unsubscribe"]).toBeUndefined();
    expect(transactional.headers["List-Unsubscribe-Post"]).toBeUndefined();
  });
});
