/**
 * Operator actions on a workspace (DESIGN §9.2): `mailroom workspace pause-sending`,
 * `resume-sending`, `ban` and `unban` against the real accounts, audience, email, webhooks
 * and gateway processes over a real nats-server. A pause refuses the workspace's sends (403
 * `sending_paused`) and sends WORKSPACE_SENDING_EMAILS_PAUSED to its webhook once; resume lets
 * sends through again; a ban refuses its API keys (403 `workspace_banned`) and sends
 * WORKSPACE_BANNED. Deliveries are received on 127.0.0.1 and their signatures checked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../cli/program.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startReceiver, type Received } from "../webhooks/receiver.js";
import { verifyClientSignature, verifyStandardWebhook } from "../webhooks/verify.js";

const WS = "ws_operator";
const KEY = `mr_test_${WS}_1`;
const BYSTANDER = "ws_operator_other";
const BYSTANDER_KEY = `mr_test_${BYSTANDER}_1`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("workspace pause and ban (CLI → accounts → API and webhooks)", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let token = "";
  const got = () => receiver.received;
  const api = (method: string, path: string, body?: unknown, key = KEY) => sys.api(method, path, { key, body });
  const send = (key = KEY, from = "hello@operator.test") => api("POST", "/v1/emails", { from, to: "someone@example.test", subject: "Hi", html: "<p>Hi</p>" }, key);

  async function cli(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(args, {
      env: { MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${sys.ports.accounts}`, MAILROOM_AUDIENCE_URL: `http://127.0.0.1:${sys.ports.audience}` },
      interactive: false,
      output: (json) => ({ out: (l) => out.push(l), err: (l) => err.push(l), json }),
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  async function waitFor(what: string, pick: (g: Received) => boolean, timeoutMs = 20_000): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = got().find(pick);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${got().map((g) => g.event.type).join(", ")}\n${await sys.log("accounts", 30)}\n${await sys.log("webhooks", 30)}`);
      await sleep(25);
    }
  }

  const signed = (g: Received) => {
    expect(verifyClientSignature(g.body, g.headers["x-smashsend-signature"] as string, token)).toBe(true);
    expect(verifyStandardWebhook(g.body, g.headers, token)).toBe(true);
    expect(g.event.workspaceId).toBe(WS);
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    const url = receiver.url;
    const workspace = (id: string, key: string) => ({ id, name: id, timezone: "UTC", apiKeys: [{ key, scopes: ["api_user"] }], verifiedDomains: ["operator.test"] });
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "email", "webhooks", "gateway"],
      // Keys are re-checked at once, so a ban shows on the next request.
      bootstrap: { workspaces: [workspace(WS, KEY), workspace(BYSTANDER, BYSTANDER_KEY)] },
    });
    const res = await api("POST", "/v1/webhooks", { url, events: ["WORKSPACE_SENDING_EMAILS_PAUSED", "WORKSPACE_BANNED"] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    token = res.body.webhook.token;
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  it("sends work before any action", async () => {
    const res = await send();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it("pause-sending: sends refused with 403 sending_paused, one WORKSPACE_SENDING_EMAILS_PAUSED delivery", async () => {
    const paused = await cli("workspace", "pause-sending", WS, "--reason", "complaint rate above 0.3%");
    expect(paused.code, paused.err).toBe(0);
    expect(paused.out).toMatch(/paused since .*complaint rate above 0\.3%/);

    const single = await send();
    expect(single.status, JSON.stringify(single.body)).toBe(403);
    expect(single.body.code).toBe("sending_paused");
    expect(single.body.message).toMatch(/complaint rate above 0\.3%/);
    const batch = await api("POST", "/v1/emails/batch", { emails: [{ from: "hello@operator.test", to: "a@example.test", subject: "S", html: "<p>x</p>" }] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(403);
    expect(batch.body.code).toBe("sending_paused");
    // The rest of the API still works, and another workspace still sends.
    expect((await api("GET", "/v1/contacts")).status).toBe(200);
    expect((await send(BYSTANDER_KEY)).status).toBe(200);

    // Pausing again changes nothing and announces nothing.
    const again = await cli("workspace", "pause-sending", WS);
    expect(again.code).toBe(0);
    expect(again.err).toMatch(/unchanged/);

    const hit = await waitFor("WORKSPACE_SENDING_EMAILS_PAUSED", (g) => g.event.type === "WORKSPACE_SENDING_EMAILS_PAUSED");
    signed(hit);
    expect(hit.event.data.workspace).toMatchObject({ id: WS, sendingPaused: true, banned: false, sendingPausedReason: "complaint rate above 0.3%" });
    expect(hit.event.data.reason).toBe("complaint rate above 0.3%");
    await sleep(1_000);
    expect(got().filter((g) => g.event.type === "WORKSPACE_SENDING_EMAILS_PAUSED")).toHaveLength(1);
  }, 60_000);

  it("resume-sending: sends work again", async () => {
    const resumed = await cli("workspace", "resume-sending", WS);
    expect(resumed.code, resumed.err).toBe(0);
    expect(resumed.out).toMatch(/sending\s+allowed/);
    const res = await send();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }, 30_000);

  it("ban: the workspace's keys get 403 workspace_banned, one WORKSPACE_BANNED delivery; unban restores them", async () => {
    const banned = await cli("--json", "workspace", "ban", WS, "--reason", "phishing");
    expect(banned.code, banned.err).toBe(0);
    expect(JSON.parse(banned.out)).toMatchObject({ changed: true, workspace: { id: WS, banned: true, bannedReason: "phishing" } });

    for (const [method, path] of [["GET", "/v1/contacts"], ["GET", "/v1/webhooks"]] as const) {
      const res = await api(method, path);
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(res.body.code).toBe("workspace_banned");
      expect(res.body.docsUrl).toMatch(/workspace_banned$/);
    }
    const refused = await send();
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("workspace_banned");
    // A bystander is untouched.
    expect((await api("GET", "/v1/contacts", undefined, BYSTANDER_KEY)).status).toBe(200);

    const hit = await waitFor("WORKSPACE_BANNED", (g) => g.event.type === "WORKSPACE_BANNED");
    signed(hit);
    expect(hit.event.data.workspace).toMatchObject({ id: WS, banned: true, bannedReason: "phishing" });
    expect(got().filter((g) => g.event.type === "WORKSPACE_BANNED")).toHaveLength(1);

    const unbanned = await cli("workspace", "unban", WS);
    expect(unbanned.code, unbanned.err).toBe(0);
    expect((await api("GET", "/v1/contacts")).status).toBe(200);
    expect((await send()).status).toBe(200);
  }, 60_000);

  it("an unknown workspace is a CLI error, not a crash", async () => {
    const res = await cli("workspace", "ban", "ws_nope");
    expect(res.code).not.toBe(0);
    expect(res.err).toMatch(/ws_nope|not found/i);
  });
});
