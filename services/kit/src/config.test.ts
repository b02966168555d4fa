import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, envBool, envHostName, loadConfig, loadSettings } from "./config.js";

describe("loadConfig (what every process shares)", () => {
  it("defaults to the local launcher's layout", () => {
    const c = loadConfig({});
    expect(c.httpPort).toBe(8080);
    expect(c.publicUrl).toBe("http://localhost:8080");
    expect(c.natsUrl).toBe("nats://127.0.0.1:4222");
    expect(c.natsReplicas).toBe(1);
    expect(c.urls.webhooks).toBe("http://127.0.0.1:7107");
    expect(c.exitWithParent).toBe(false);
  });

  it("holds no unit's settings", () => {
    const keys = Object.keys(loadConfig({ MAILROOM_SMTP_URL: "smtp://relay.test:25", MAILROOM_DELIVERY_CONCURRENCY: "3" }));
    expect(keys).not.toContain("delivery");
    expect(keys).not.toContain("smtpUrl");
    expect(keys).not.toContain("webhooks");
    expect(keys).not.toContain("inbound");
  });

  it("points the two units of the split at their own ports, and refuses the directory's old setting", () => {
    const c = loadConfig({});
    expect(c.urls.accounts).toBe("http://127.0.0.1:7101");
    expect(c.urls.audience).toBe("http://127.0.0.1:7109");
    expect(() => loadConfig({ MAILROOM_DIRECTORY_URL: "http://10.0.0.5:7101" })).toThrow(/MAILROOM_DIRECTORY_URL: .*MAILROOM_ACCOUNTS_URL .*MAILROOM_AUDIENCE_URL/);
  });

  it("refuses a bad shared value with a message naming the variable", () => {
    expect(() => loadConfig({ MAILROOM_NATS_REPLICAS: "7" })).toThrow(ConfigError);
    expect(() => loadConfig({ MAILROOM_NATS_REPLICAS: "7" })).toThrow(/^invalid configuration:\n {2}MAILROOM_NATS_REPLICAS: /);
  });
});

describe("loadSettings (a unit's own schema)", () => {
  const schema = z.object({
    MAILROOM_THING_SIZE: z.coerce.number().int().min(1).max(10).default(4),
    MAILROOM_THING_ON: envBool.default(false),
    MAILROOM_THING_DOMAIN: envHostName,
  });

  it("applies defaults and ignores variables the schema does not name", () => {
    expect(loadSettings(schema, { MAILROOM_NATS_URL: "nats://elsewhere:4222" })).toEqual({
      MAILROOM_THING_SIZE: 4,
      MAILROOM_THING_ON: false,
      MAILROOM_THING_DOMAIN: undefined,
    });
  });

  it("coerces numbers, booleans and host names", () => {
    const s = loadSettings(schema, { MAILROOM_THING_SIZE: "7", MAILROOM_THING_ON: "yes", MAILROOM_THING_DOMAIN: " Bounce.Example.TEST " });
    expect(s).toEqual({ MAILROOM_THING_SIZE: 7, MAILROOM_THING_ON: true, MAILROOM_THING_DOMAIN: "bounce.example.test" });
    expect(loadSettings(schema, { MAILROOM_THING_DOMAIN: "  " }).MAILROOM_THING_DOMAIN).toBeUndefined();
  });

  it("refuses bad values with one line per variable, as loadConfig does", () => {
    let err: unknown;
    try {
      loadSettings(schema, { MAILROOM_THING_SIZE: "11", MAILROOM_THING_ON: "maybe" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const lines = (err as Error).message.split("\n");
    expect(lines[0]).toBe("invalid configuration:");
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^ {2}MAILROOM_THING_SIZE: .*10/);
    expect(lines[2]).toMatch(/^ {2}MAILROOM_THING_ON: /);
  });
});
