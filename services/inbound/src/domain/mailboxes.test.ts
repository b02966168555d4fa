import { describe, expect, it } from "vitest";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { verpAddress } from "@mailroom/content/verp.js";
import { mailboxOf } from "./mailboxes.js";

const CURRENT = "inbound-current-secret-0123456789";
const PREVIOUS = "inbound-previous-secret-0123456789";
const recipient = { workspaceId: "ws_1", messageId: "m@x", email: "ann@x.test", contactId: "", contentId: "trs_1" };

describe("mailboxes across a secret rotation", () => {
  const rotating = { secret: [CURRENT, PREVIOUS], domains: ["b.test"] };

  it("accepts return paths and unsubscribe tokens minted under the previous secret", () => {
    const oldReturnPath = verpAddress(PREVIOUS, "trs_1", "b.test")!;
    expect(mailboxOf(oldReturnPath, rotating)).toEqual({ kind: "return-path", deliveryId: "trs_1" });
    const oldToken = signRecipientToken(PREVIOUS, recipient);
    expect(mailboxOf(`unsubscribe+${oldToken}@b.test`, rotating)).toEqual({ kind: "unsubscribe", token: oldToken });
  });

  it("refuses them once the previous secret is gone", () => {
    const current = { secret: CURRENT, domains: ["b.test"] };
    expect(mailboxOf(verpAddress(PREVIOUS, "trs_1", "b.test")!, current)).toBeUndefined();
    expect(mailboxOf(`unsubscribe+${signRecipientToken(PREVIOUS, recipient)}@b.test`, current)).toBeUndefined();
    expect(mailboxOf(verpAddress(CURRENT, "trs_1", "b.test")!, current)).toEqual({ kind: "return-path", deliveryId: "trs_1" });
  });
});

describe("a forward's SRS return path (DESIGN §10.4)", () => {
  it("is a mailbox only when its hash verifies, at whatever domain the forward used", async () => {
    const { srsForward } = await import("./srs.js");
    const policy = { secret: [CURRENT, PREVIOUS], domains: ["b.test"] };
    const srs = srsForward(CURRENT, "ann@sender.example", "mx.mailroom.test");
    expect(mailboxOf(srs, policy)).toEqual({ kind: "srs", original: "ann@sender.example" });
    expect(mailboxOf(srsForward(PREVIOUS, "ann@sender.example", "b.test"), policy)).toEqual({ kind: "srs", original: "ann@sender.example" });
    expect(mailboxOf(srsForward("someone-else", "ann@sender.example", "b.test"), policy)).toBeUndefined();
    expect(mailboxOf(srs.replace("=ann@", "=bob@"), policy)).toBeUndefined();
    expect(mailboxOf("SRS0=abc@b.test", policy)).toBeUndefined();
  });
});
