import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { currentTraceparent, inSpan, startTracing, stopTracing } from "@mailroom/kit/tracing.js";
import { otlpEnv, startOtlpReceiver, type OtlpReceiver } from "../../../../test/harness/otlp-receiver.js";
import type { StoredEmail } from "../domain/model.js";
import { SCHEDULED_SEND_SPAN, scheduledSendScope } from "./tracing.js";

const email = (traceparent?: string) => ({ id: "trs_1", workspaceId: "ws_1", sendAt: new Date(), traceparent }) as StoredEmail;

describe("scheduledSendScope with tracing off", () => {
  it("only runs the release", async () => {
    expect(await scheduledSendScope(email("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), async () => currentTraceparent())).toBe("");
  });
});

/** Real SDK, real OTLP/HTTP export to the test receiver (the SDK reads process.env as it starts). */
describe("scheduledSendScope with tracing on", () => {
  let receiver: OtlpReceiver;
  const saved = { ...process.env };
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    Object.assign(process.env, otlpEnv(receiver));
    expect(await startTracing("email-test")).toBe(true);
  });
  afterAll(async () => {
    await stopTracing();
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    await receiver?.close();
  });

  it("starts a new trace, linked to the creating request, that the release's own spans join", async () => {
    // The creating request: a span that is still active while the scope runs (as inside a tick
    // started by it in a test), so a scope that merely continued the active trace would fail.
    const request = await inSpan("request", {}, async () => {
      const traceparent = currentTraceparent();
      await scheduledSendScope(email(traceparent), () => inSpan("publish mail.delivery", {}, async () => undefined));
      return traceparent;
    });
    const [, requestTrace, requestSpan] = request.split("-");
    const spans = await receiver.waitFor((s) => s.some((x) => x.name === "publish mail.delivery"), 20_000);
    const root = spans.find((s) => s.name === SCHEDULED_SEND_SPAN)!;
    const child = spans.find((s) => s.name === "publish mail.delivery")!;
    expect(root.parentSpanId).toBeUndefined();
    expect(root.traceId).not.toBe(requestTrace);
    expect(root.links).toEqual([{ traceId: requestTrace, spanId: requestSpan, attributes: { "mailroom.link": "created_by" } }]);
    expect(root.attributes).toMatchObject({ "mailroom.email_id": "trs_1", "mailroom.workspace_id": "ws_1", "mailroom.scheduled": true });
    expect(child).toMatchObject({ traceId: root.traceId, parentSpanId: root.spanId });
  });

  it("starts an unlinked trace for an email stored while tracing was off", async () => {
    await scheduledSendScope({ ...email(undefined), id: "trs_2" }, async () => undefined);
    const spans = await receiver.waitFor((s) => s.some((x) => x.attributes["mailroom.email_id"] === "trs_2"), 20_000);
    expect(spans.find((x) => x.attributes["mailroom.email_id"] === "trs_2")!.links).toEqual([]);
  });
});
