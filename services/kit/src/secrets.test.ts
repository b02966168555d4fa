import { describe, expect, it } from "vitest";
import { ConfigError, DEVELOPMENT_SECRET, loadConfig } from "./config.js";
import { isSealed, needsReseal, openSecret, openStoredSecret, sealSecret, SECRET_PURPOSES, SecretError, secretKeysOf } from "./secrets.js";

const OLD = "old-secret-0123456789abcdef";
const NEW = "new-secret-0123456789abcdef";
const WEBHOOK_TOKEN = "whsec_3q2+7wAAAAB0b2tlbi1mb3ItYS13ZWJob29r";

describe("sealed secrets", () => {
  it("round-trips and never contains the plaintext", () => {
    const sealed = sealSecret({ current: NEW }, SECRET_PURPOSES.webhookToken, WEBHOOK_TOKEN);
    expect(isSealed(sealed)).toBe(true);
    expect(sealed).not.toContain(WEBHOOK_TOKEN);
    expect(sealed).not.toContain("whsec_");
    expect(openSecret({ current: NEW }, "webhook-token", sealed)).toBe(WEBHOOK_TOKEN);
    // A fresh nonce each time: equal secrets do not give equal sealed values.
    expect(sealSecret({ current: NEW }, "webhook-token", WEBHOOK_TOKEN)).not.toBe(sealed);
  });

  it("refuses another purpose, another secret and altered values", () => {
    const sealed = sealSecret({ current: NEW }, "webhook-token", WEBHOOK_TOKEN);
    expect(() => openSecret({ current: NEW }, "dkim-private-key", sealed)).toThrow(SecretError);
    expect(() => openSecret({ current: OLD }, "webhook-token", sealed)).toThrow(/MAILROOM_SECRET_PREVIOUS/);
    const body = sealed.split(".")[2];
    const flipped = body.slice(0, 20) + (body[20] === "A" ? "B" : "A") + body.slice(21);
    expect(() => openSecret({ current: NEW }, "webhook-token", sealed.replace(body, flipped))).toThrow(/does not authenticate/);
    expect(() => openSecret({ current: NEW }, "webhook-token", sealed.slice(0, 20))).toThrow(SecretError);
    expect(() => openSecret({ current: NEW }, "webhook-token", "plain")).toThrow(SecretError);
  });

  it("rotation: the previous secret still opens, the current one seals, old values are flagged for resealing", () => {
    const underOld = sealSecret({ current: OLD }, "dkim-private-key", "PEM");
    const rotated = { current: NEW, previous: OLD };
    expect(openSecret(rotated, "dkim-private-key", underOld)).toBe("PEM");
    expect(needsReseal(rotated, "dkim-private-key", underOld)).toBe(true);
    const resealed = sealSecret(rotated, "dkim-private-key", "PEM");
    expect(needsReseal(rotated, "dkim-private-key", resealed)).toBe(false);
    expect(openSecret({ current: NEW }, "dkim-private-key", resealed)).toBe("PEM");
    // Legacy plaintext passes through and is flagged.
    expect(openStoredSecret(rotated, "dkim-private-key", "-----BEGIN PRIVATE KEY-----")).toBe("-----BEGIN PRIVATE KEY-----");
    expect(needsReseal(rotated, "dkim-private-key", "-----BEGIN PRIVATE KEY-----")).toBe(true);
  });

  it("reads MAILROOM_SECRET_PREVIOUS from the config", () => {
    const config = loadConfig({ MAILROOM_SECRET: NEW, MAILROOM_SECRET_PREVIOUS: OLD });
    expect(secretKeysOf(config)).toEqual({ current: NEW, previous: OLD });
    // Empty (compose's `${MAILROOM_SECRET_PREVIOUS:-}`) means none; a short one is a mistake.
    expect(loadConfig({ MAILROOM_SECRET: NEW, MAILROOM_SECRET_PREVIOUS: "" }).previousSecret).toBeUndefined();
    expect(() => loadConfig({ MAILROOM_SECRET: NEW, MAILROOM_SECRET_PREVIOUS: "short" })).toThrow(/MAILROOM_SECRET_PREVIOUS/);
  });
});

describe("production config", () => {
  it("refuses the development secret with NODE_ENV=production", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: "production", MAILROOM_SECRET: DEVELOPMENT_SECRET })).toThrow(/MAILROOM_SECRET: NODE_ENV=production needs your own secret/);
    expect(loadConfig({ NODE_ENV: "production", MAILROOM_SECRET: NEW }).production).toBe(true);
    expect(loadConfig({}).secret).toBe(DEVELOPMENT_SECRET);
  });
});
