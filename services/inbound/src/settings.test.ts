import { describe, expect, it } from "vitest";
import { ConfigError } from "@mailroom/kit/config.js";
import { loadInboundSettings } from "./settings.js";

describe("inbound settings", () => {
  it("keeps the defaults users rely on", () => {
    expect(loadInboundSettings({})).toEqual({
      port: 2525, maxMessageBytes: 35 * 1024 * 1024, rememberMs: 30 * 24 * 3600_000, retentionMs: 30 * 24 * 3600_000, ratePerMinute: 600,
      inboundMxHost: "inbound.mailroom.local", dnsServers: undefined, spamdUrl: undefined, spamMaxBytes: 512 * 1024, bounceDomain: undefined, providers: {},
    });
  });

  it("reads days as milliseconds and the bounce domain in lower case", () => {
    const s = loadInboundSettings({ MAILROOM_INBOUND_REMEMBER_DAYS: "1.5", MAILROOM_BOUNCE_DOMAIN: "Bounce.Example.TEST" });
    expect(s.rememberMs).toBe(36 * 3600_000);
    expect(s.bounceDomain).toBe("bounce.example.test");
  });

  it("refuses a bad value with a message naming the variable", () => {
    expect(() => loadInboundSettings({ MAILROOM_INBOUND_PORT: "70000" })).toThrow(ConfigError);
    expect(() => loadInboundSettings({ MAILROOM_INBOUND_MAX_BYTES: "10" })).toThrow(/^invalid configuration:\n {2}MAILROOM_INBOUND_MAX_BYTES: /);
  });
});

describe("provider webhook settings", () => {
  it("turns a provider on with its variable and refuses a value that cannot work", async () => {
    const { SENDGRID_TEST_PUBLIC_KEY } = await import("./testing.js");
    const s = loadInboundSettings({
      MAILROOM_SES_TOPIC_ARNS: "arn:aws:sns:eu-west-1:123456789012:ses-events, arn:aws-cn:sns:cn-north-1:123456789012:other",
      MAILROOM_POSTMARK_WEBHOOK_AUTH: "mailroom:pa:ss",
      MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: SENDGRID_TEST_PUBLIC_KEY,
      MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: "key-1",
    });
    expect(s.providers.ses).toEqual({ topicArns: ["arn:aws:sns:eu-west-1:123456789012:ses-events", "arn:aws-cn:sns:cn-north-1:123456789012:other"] });
    expect(s.providers.postmark).toEqual({ user: "mailroom", password: "pa:ss" });
    expect(s.providers.sendgrid?.publicKey.asymmetricKeyType).toBe("ec");
    expect(s.providers.mailgun).toEqual({ signingKey: "key-1" });
    expect(() => loadInboundSettings({ MAILROOM_SES_TOPIC_ARNS: "my-topic" })).toThrow(/MAILROOM_SES_TOPIC_ARNS: must be comma-separated SNS topic ARNs/);
    expect(() => loadInboundSettings({ MAILROOM_POSTMARK_WEBHOOK_AUTH: "just-a-password" })).toThrow(/MAILROOM_POSTMARK_WEBHOOK_AUTH/);
    expect(() => loadInboundSettings({ MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: "bm90IGEga2V5" })).toThrow(/MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY/);
    expect(() => loadInboundSettings({ MAILROOM_SES_TOPIC_ARNS: "arn:aws:sns:eu-west-1:123456789012:t", MAILROOM_TEST_SNS_SIGNING_CERT_FILE: "/tmp/c.pem", NODE_ENV: "production" }))
      .toThrow(/MAILROOM_TEST_SNS_SIGNING_CERT_FILE: is for tests/);
  });

  it("reads MAILROOM_TEST_SNS_SIGNING_CERT_FILE at start: a missing file, one without a certificate or one without SES topics is refused", async () => {
    const { SNS_TEST_CERT_FILE } = await import("./testing.js");
    const topic = { MAILROOM_SES_TOPIC_ARNS: "arn:aws:sns:eu-west-1:123456789012:t" };
    const s = loadInboundSettings({ ...topic, MAILROOM_TEST_SNS_SIGNING_CERT_FILE: SNS_TEST_CERT_FILE });
    expect(s.providers.ses?.testCertificate).toContain("-----BEGIN CERTIFICATE-----");
    expect(() => loadInboundSettings({ ...topic, MAILROOM_TEST_SNS_SIGNING_CERT_FILE: "/nonexistent/c.pem" })).toThrow(/MAILROOM_TEST_SNS_SIGNING_CERT_FILE: cannot read \/nonexistent\/c.pem: ENOENT/);
    expect(() => loadInboundSettings({ ...topic, MAILROOM_TEST_SNS_SIGNING_CERT_FILE: import.meta.filename })).toThrow(/MAILROOM_TEST_SNS_SIGNING_CERT_FILE: .* holds no PEM certificate/);
    expect(() => loadInboundSettings({ MAILROOM_TEST_SNS_SIGNING_CERT_FILE: SNS_TEST_CERT_FILE })).toThrow(/MAILROOM_TEST_SNS_SIGNING_CERT_FILE: set, but MAILROOM_SES_TOPIC_ARNS is not/);
  });
});
