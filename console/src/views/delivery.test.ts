import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { GetStatusResponseSchema } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { deliveryView } from "./delivery.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";

describe("delivery view", () => {
  it("escapes what the delivery process reports, in text and attributes", () => {
    const status = create(GetStatusResponseSchema, {
      mode: "direct", ehloName: HOSTILE, localAddress: HOSTILE, processId: HOSTILE,
      routes: [{ name: HOSTILE, kind: "direct", target: HOSTILE, provider: HOSTILE, lastError: HOSTILE, weight: 1, workspaces: ["ws_1", "ws_2"] }],
    });
    const page = deliveryView(status, undefined, "ws_1").toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<code data-field="Route">${ESCAPED}</code>`);
    expect(page).toContain(`<div data-field="Provider"><span class="muted">Provider:</span> ${ESCAPED}</div>`);
    expect(page).toContain(`Last error: ${ESCAPED}`);
    expect(page).toContain(`<th scope="row">EHLO name</th><td><code>${ESCAPED}</code></td>`);
    expect(page).toContain("This workspace and 1 other workspace only");
  });

  it("says why there is no status", () => {
    expect(deliveryView(undefined, HOSTILE, "ws_1").toString()).toContain(`The delivery service did not answer: ${ESCAPED}</p>`);
  });
});
