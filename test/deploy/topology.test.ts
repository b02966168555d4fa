/**
 * deploy/docker-compose.yml, proven without a container engine: every unit runs on its own
 * loopback address, as in its own container, wired only by the MAILROOM_* environment compose
 * gives it. A server bound to 127.0.0.1 inside a container is unreachable from the others;
 * here a unit bound to 127.0.0.1 is unreachable on its own address in just the same way.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { availableUnits, REPO_ROOT, UNITS, type UnitName } from "../../deploy/processes.js";
import { freePort } from "../harness/ports.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { composePortOf, composeTopology, readCompose, UNIT_ADDRESSES, type ComposeTopology } from "./compose.js";

const compose = readCompose();
const deployed = availableUnits().map((u) => u.name);
// From deploy/bootstrap.example.json, which compose mounts into the accounts unit.
const KEY = "mr_test_acme_1";
/** An address no unit binds: a server listening on every interface would answer here. */
const UNUSED_ADDRESS = "127.0.0.99";

describe("deploy/docker-compose.yml", () => {
  it("runs every unit with its entry point, binding every interface of its container", () => {
    for (const unit of availableUnits()) {
      const service = compose.services[unit.name];
      expect(service, `compose service ${unit.name}`).toBeDefined();
      // The same V8 flags as the launcher gives the unit (deploy/processes.ts).
      expect(service.command).toEqual(["node", ...(unit.nodeArgs ?? []), "--import", "tsx", unit.entry]);
      expect(service.environment?.MAILROOM_SERVICE_HOST, unit.name).toBe("0.0.0.0");
    }
    expect(compose.services.gateway.environment?.MAILROOM_HTTP_HOST).toBe("0.0.0.0");
  });

  it("points every unit at the others by service name and the port each one listens on", () => {
    for (const unit of deployed) {
      const env = compose.services[unit].environment ?? {};
      for (const target of UNITS.filter((u) => u.urlVar)) {
        const port = compose.services[target.name] ? composePortOf(compose.services[target.name]) : target.defaultPort;
        expect(env[target.urlVar!], `${unit}: ${target.urlVar}`).toBe(`http://${target.name}:${port}`);
      }
      expect(env.MAILROOM_NATS_URL, unit).toBe("nats://nats:4222");
    }
    expect(compose.services.nats.command).toEqual(expect.arrayContaining(["-js"]));
    // PostgreSQL is the store; MongoDB stays a profile away, and both URLs set are refused at start.
    expect(compose.services.postgres.image).toMatch(/^postgres:/);
    expect(compose.services.mongo.profiles).toEqual(["mongodb"]);
    for (const unit of deployed) {
      const env = compose.services[unit].environment ?? {};
      expect(env.MAILROOM_POSTGRES_URL, unit).toMatch(/@postgres:5432\//);
      expect(env.MAILROOM_MONGODB_URL, unit).toBe("${MAILROOM_MONGODB_URL:-}");
    }
  });

  it("starts a unit only once what it needs reports ready on /readyz", () => {
    for (const name of ["nats", "postgres", "mongo", ...deployed]) {
      expect(compose.services[name].healthcheck?.test, `${name} healthcheck`).toBeDefined();
    }
    for (const unit of deployed) {
      const service = compose.services[unit];
      expect(service.healthcheck!.test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
      expect(service.healthcheck!.test[3]).toContain("/readyz");
      const needs = Object.entries(service.depends_on ?? {});
      expect(needs.map(([name]) => name)).toEqual(expect.arrayContaining(["nats", "postgres"]));
      for (const [name, { condition }] of needs) expect(condition, `${unit} → ${name}`).toBe("service_healthy");
    }
    expect(Object.keys(compose.services.gateway.depends_on!)).toEqual(expect.arrayContaining(deployed.filter((u) => u !== "gateway")));
  });

  it("builds one image that holds every entry point and runs TypeScript without dev dependencies", () => {
    const dockerfile = readFileSync(path.join(REPO_ROOT, "deploy/Dockerfile"), "utf8");
    const copied = [...dockerfile.matchAll(/^COPY (\S+) /gm)].map((m) => m[1]);
    for (const unit of availableUnits()) expect(copied, unit.entry).toContain(unit.entry.split("/")[0]);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8"));
    expect(Object.keys(pkg.dependencies)).toContain("tsx");
  });
});

describe("the compose topology, each unit on its own address", () => {
  let topology: ComposeTopology;
  let sys: TestSystem;
  beforeAll(async () => {
    topology = await composeTopology(compose, deployed);
    // On real PostgreSQL, as the compose file runs it (a database of the system's own).
    sys = await startSystem({ topology: topology.placements, units: deployed, store: "postgres" });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("serves each unit on its own address only, where compose's healthcheck finds it healthy", async () => {
    for (const unit of deployed) {
      const host = UNIT_ADDRESSES[unit]!;
      const port = sys.ports[unit];
      expect(await healthz(host, port), `${unit} on ${host}:${port}`).toBe(200);
      expect(await canConnect(UNUSED_ADDRESS, port), `${unit} also listens on ${UNUSED_ADDRESS}`).toBe(false);
      // The container's own loopback is this unit's address here.
      const check = compose.services[unit].healthcheck!.test[3].replaceAll("127.0.0.1", host);
      await expect(runNode(check, { MAILROOM_SERVICE_PORT: String(port), MAILROOM_HTTP_PORT: String(port) }), unit).resolves.toBe(0);
    }
  });

  it("sends an email through the gateway's public API to the SMTP relay", async () => {
    expect(sys.gatewayUrl).toBe(topology.gatewayUrl);
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "Acme Team <team@acme.test>", to: "ann@example.test", subject: "Across containers", html: "<p>Hello from every unit.</p>" },
    });
    expect(res.status, JSON.stringify(res.body) + (await logs(sys))).toBe(200);
    expect(res.body.email).toMatchObject({ status: "SENT", to: "ann@example.test", type: "raw" });

    const [msg] = await sys.sink!.waitFor(1, 20_000).catch(async (err) => {
      throw new Error(`${err.message}${await logs(sys)}`);
    });
    expect(msg.to).toEqual(["ann@example.test"]);
    const parsed = await PostalMime.parse(msg.raw);
    expect(parsed.from).toMatchObject({ address: "team@acme.test", name: "Acme Team" });
    expect(parsed.subject).toBe("Across containers");
    expect(parsed.html).toContain("Hello from every unit.");
    expect(parsed.messageId).toBe(`<${res.body.email.messageId}>`);
  });
});

describe("without MAILROOM_SERVICE_HOST (the bug compose had)", () => {
  let sys: TestSystem;
  let port: number;
  beforeAll(async () => {
    const topology = await composeTopology(compose, ["audience"]);
    port = await freePort();
    sys = await startSystem({
      smtp: false,
      units: ["audience"],
      topology: (infra) => {
        const audience = topology.placements(infra).audience;
        // Everything compose gives the audience unit except the bind address: it defaults to 127.0.0.1.
        const { MAILROOM_SERVICE_HOST: _left_out, ...env } = audience.env;
        return { audience: { host: "127.0.0.1", port, env: { ...env, MAILROOM_SERVICE_PORT: String(port) } } };
      },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("a unit bound to 127.0.0.1 cannot be reached on its own address", async () => {
    expect(await healthz("127.0.0.1", port)).toBe(200);
    expect(await canConnect(UNIT_ADDRESSES.audience!, port)).toBe(false);
    expect(await healthz(UNIT_ADDRESSES.audience!, port)).toBe("unreachable");
  });
});

async function healthz(host: string, port: number): Promise<number | "unreachable"> {
  try {
    return (await fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return "unreachable";
  }
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    socket.once("connect", () => { socket.destroy(); resolve(true); });
    socket.once("error", () => resolve(false));
  });
}

async function runNode(script: string, env: Record<string, string>): Promise<number> {
  try {
    await promisify(execFile)(process.execPath, ["-e", script], { env: { PATH: process.env.PATH, ...env }, timeout: 10_000 });
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? 1;
  }
}

async function logs(sys: TestSystem): Promise<string> {
  const parts = await Promise.all((["gateway", "email", "delivery"] as UnitName[]).map(async (u) => `\n--- ${u} log ---\n${await sys.log(u)}`));
  return parts.join("");
}
