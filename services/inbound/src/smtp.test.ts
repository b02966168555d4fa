import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer from "nodemailer";
import { verpAddress } from "@mailroom/content/verp.js";
import { startSmtpListener, type SmtpListener } from "./smtp.js";
import { BOUNCE_DOMAIN, fixture, sentDelivery, silentLogger, TEST_SECRET, testInbound } from "./testing.js";

const t = testInbound();
let listener: SmtpListener;

function send(to: string, raw: string) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: listener.port, secure: false, ignoreTLS: true });
  return transport.sendMail({ envelope: { from: "", to }, raw }).finally(() => transport.close());
}
const failure = (p: Promise<unknown>) => p.then(() => undefined, (err) => err as { responseCode?: number; response?: string });

beforeAll(async () => {
  listener = await startSmtpListener({ inbound: t.inbound, port: 0, host: "127.0.0.1", maxMessageBytes: 64 * 1024, logger: silentLogger });
});
afterAll(async () => listener?.close());

describe("SMTP listener", () => {
  const delivery = sentDelivery();
  const verp = verpAddress(TEST_SECRET, delivery.deliveryId, BOUNCE_DOMAIN)!;

  it("asks the sender to retry (451) while the delivery is unknown, then accepts (250)", async () => {
    const raw = fixture("dsn-hard-5.1.1.eml", { deliveryId: delivery.deliveryId });
    expect(await failure(send(verp, raw))).toMatchObject({ responseCode: 451 });
    expect(t.suppressions.suppressed).toEqual([]);
    await t.inbound.rememberSent(delivery);
    expect((await send(verp, raw)).accepted).toEqual([verp]);
    expect(t.suppressions.suppressed).toMatchObject([{ email: "ann@example.test", reason: "hard_bounce" }]);
  });

  it("refuses other recipients with 550 and messages over the size limit with 552", async () => {
    expect(await failure(send(`nobody@${BOUNCE_DOMAIN}`, "Subject: x\r\n\r\ny\r\n"))).toMatchObject({ responseCode: 550 });
    const big = `Subject: big\r\n\r\n${"x".repeat(76)}\r\n`.padEnd(70 * 1024, "y\r\n");
    expect(await failure(send(verp, big))).toMatchObject({ responseCode: 552 });
  });
});

describe("SMTP listener rate limit", () => {
  it("answers 421 4.7.0 to a client IP past its messages per minute", async () => {
    const limited = await startSmtpListener({ inbound: t.inbound, port: 0, host: "127.0.0.1", maxMessageBytes: 64 * 1024, ratePerMinute: 2, logger: silentLogger });
    try {
      const to = `fbl@${BOUNCE_DOMAIN}`;
      const once = () => {
        const transport = nodemailer.createTransport({ host: "127.0.0.1", port: limited.port, secure: false, ignoreTLS: true });
        return transport.sendMail({ envelope: { from: "isp@example.test", to }, raw: "Subject: x\r\n\r\ny\r\n" }).finally(() => transport.close());
      };
      expect((await once()).accepted).toEqual([to]);
      expect((await once()).accepted).toEqual([to]);
      expect(await failure(once())).toMatchObject({ responseCode: 421, response: expect.stringContaining("4.7.0") });
    } finally {
      await limited.close();
    }
  });
});

describe("rate limit key", () => {
  it("is the IPv4 address (also when IPv4-mapped) or the IPv6 /64", async () => {
    const { senderKey } = await import("./smtp.js");
    expect(senderKey("192.0.2.7")).toBe("192.0.2.7");
    expect(senderKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(senderKey("2001:db8:1:2:aaaa::1")).toBe(senderKey("2001:db8:1:2:bbbb::9"));
    expect(senderKey("2001:db8:1:2::1")).not.toBe(senderKey("2001:db8:1:3::1"));
  });
});
