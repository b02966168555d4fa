import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

const KEY = "mr_test_skeleton_key_1";

/** One raw email the whole way: HTTP → gateway → email → JetStream → delivery → SMTP. */
describe("walking skeleton", () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_skeleton", name: "Skeleton", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("delivers a raw email as a real MIME message and answers with the spec's record", async () => {
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "Acme Team <team@acme.test>", to: "ann@example.test", subject: "Welcome aboard", html: "<h1>Hello Ann</h1><p>Glad you are here.</p>" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      email: {
        id: expect.stringMatching(/^trs_[0-9a-z]{26}$/),
        messageId: expect.any(String),
        status: "SENT",
        to: "ann@example.test",
        type: "raw",
        from: "Acme Team <team@acme.test>",
        subject: "Welcome aboard",
      },
    });

    const [msg] = await sys.sink!.waitFor(1, 20_000).catch(async (err) => {
      throw new Error(`${err.message}\n--- email log ---\n${await sys.log("email")}\n--- delivery log ---\n${await sys.log("delivery")}`);
    });
    expect(msg.to).toEqual(["ann@example.test"]);
    const parsed = await PostalMime.parse(msg.raw);
    expect(parsed.from).toMatchObject({ address: "team@acme.test", name: "Acme Team" });
    expect(parsed.to?.[0]?.address).toBe("ann@example.test");
    expect(parsed.subject).toBe("Welcome aboard");
    expect(parsed.html).toContain("<h1>Hello Ann</h1>");
    expect(parsed.text).toMatch(/HELLO ANN|Hello Ann/);
    expect(parsed.text).toContain("Glad you are here.");
    expect(parsed.messageId).toBe(`<${res.body.email.messageId}>`);
  });

  it("refuses bad input with clear 4xx bodies", async () => {
    const noKey = await sys.api("POST", "/v1/emails", { body: { to: "a@example.test" } });
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ statusCode: 401, error: "Unauthorized" });

    const wrongKey = await sys.api("POST", "/v1/emails", { key: "mr_test_not_a_key", body: {} });
    expect(wrongKey.status).toBe(401);

    const malformed = await sys.api("POST", "/v1/emails", { key: KEY, body: "{\"from\": " });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ statusCode: 400, error: "Bad Request" });

    const unknown = await sys.api("GET", "/v1/nothing-here", { key: KEY });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ statusCode: 404, error: "Not Found" });
  });
});
