import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CheckDirectSendingResponseSchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ehloView } from "./delivery.js";
import { directSendingView } from "./domains.js";

const ehloHtml = (ehlo: string) => ehloView(ehlo).toString();
const directSendingHtml = (...args: Parameters<typeof directSendingView>) => directSendingView(...args).toString();

/**
 * Direct delivery without a qualified EHLO name sends its address literal: the Delivery page
 * and the domain page's DNS check say so and name MAILROOM_DELIVERY_EHLO_NAME, instead of
 * showing an unqualified host name that is never sent.
 */
describe("the console's EHLO name of direct delivery", () => {
  it("shows a name as is, and an address literal or none with the variable to set", () => {
    expect(ehloHtml("mta1.example.com")).toBe("<code>mta1.example.com</code>");
    expect(ehloHtml("[192.0.2.10]")).toMatch(/^<code>\[192\.0\.2\.10\]<\/code> .*set MAILROOM_DELIVERY_EHLO_NAME/);
    expect(ehloHtml("")).toMatch(/source address literal.*set MAILROOM_DELIVERY_EHLO_NAME/);
  });

  it("the domain page's PTR check asks for MAILROOM_DELIVERY_EHLO_NAME=<the PTR name> when delivery sends an address literal", () => {
    const check = create(CheckDirectSendingResponseSchema, { ptrNames: ["mta1.example.com"], confirmedName: "mta1.example.com", ehloMatches: false, spf: [] });
    const literal = directSendingHtml("example.com", "192.0.2.10", "[192.0.2.10]", check);
    expect(literal).toContain("No EHLO name");
    expect(literal).toContain("set MAILROOM_DELIVERY_EHLO_NAME=mta1.example.com");
    expect(literal).not.toContain("Not the EHLO name");
    const other = directSendingHtml("example.com", "192.0.2.10", "mx.other.test", check);
    expect(other).toContain("Not the EHLO name");
    expect(other).toContain("<code>mx.other.test</code>");
  });
});
