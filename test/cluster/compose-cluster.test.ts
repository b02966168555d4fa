/**
 * deploy/docker-compose.cluster.yml, checked without a container engine: the same units as
 * docker-compose.yml, on a 3-node NATS cluster and a 3-member MongoDB replica set.
 * (The cluster's behaviour itself is proven by nats-cluster.test.ts on real nats-servers.)
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { availableUnits, REPO_ROOT } from "../../deploy/processes.js";
import { readCompose, type ComposeFile, type ComposeService } from "../deploy/compose.js";

const single = readCompose();
const cluster = parse(readFileSync(path.join(REPO_ROOT, "deploy/docker-compose.cluster.yml"), "utf8"), { merge: true }) as ComposeFile & {
  services: Record<string, ComposeService & { command?: string[] | string }>;
};
const NATS_NODES = ["nats1", "nats2", "nats3"];
const MONGO_MEMBERS = ["mongo1", "mongo2", "mongo3"];

describe("deploy/docker-compose.cluster.yml", () => {
  it("runs the units of docker-compose.yml with the same entry points, ports and readiness checks", () => {
    for (const unit of availableUnits()) {
      const mine = cluster.services[unit.name];
      const theirs = single.services[unit.name];
      expect(mine, unit.name).toBeDefined();
      expect(mine.command).toEqual(theirs.command);
      expect(mine.healthcheck?.test).toEqual(theirs.healthcheck?.test);
      expect(mine.healthcheck?.test[3]).toContain("/readyz");
      // Everything but the infrastructure URLs is the same.
      const differs = ["MAILROOM_NATS_URL", "MAILROOM_NATS_REPLICAS", "MAILROOM_POSTGRES_URL", "MAILROOM_MONGODB_URL", "MAILROOM_METRICS_TOKEN"];
      const keys = new Set([...Object.keys(mine.environment ?? {}), ...Object.keys(theirs.environment ?? {})].filter((k) => !differs.includes(k)));
      for (const key of keys) expect(mine.environment?.[key], `${unit.name}: ${key}`).toEqual(theirs.environment?.[key]);
      expect(mine.volumes, unit.name).toEqual(theirs.volumes);
    }
  });

  it("starts the gateway after every other unit, as docker-compose.yml does", () => {
    // The infrastructure differs (a NATS cluster, a replica set for the single file's PostgreSQL); the units do not.
    for (const name of Object.keys(single.services.gateway.depends_on ?? {}).filter((n) => n !== "nats" && n !== "postgres")) {
      expect(cluster.services.gateway.depends_on?.[name]?.condition, name).toBe("service_healthy");
    }
  });

  it("points every unit at all three NATS nodes with 3 replicas, and at the replica set", () => {
    for (const unit of availableUnits()) {
      const env = cluster.services[unit.name].environment ?? {};
      expect(String(env.MAILROOM_NATS_URL).split(",")).toEqual(NATS_NODES.map((n) => `nats://${n}:4222`));
      expect(env.MAILROOM_NATS_REPLICAS).toBe("3");
      expect(env.MAILROOM_MONGODB_URL).toBe(`mongodb://${MONGO_MEMBERS.map((m) => `${m}:27017`).join(",")}/?replicaSet=rs0`);
      // Both store URLs set is refused at start: the cluster file empties the PostgreSQL one.
      expect(env.MAILROOM_POSTGRES_URL).toBe("");
      const needs = cluster.services[unit.name].depends_on ?? {};
      for (const node of NATS_NODES) expect(needs[node]?.condition, `${unit.name} → ${node}`).toBe("service_healthy");
    }
  });

  it("clusters the NATS nodes with JetStream, each routing to the other two", () => {
    for (const node of NATS_NODES) {
      const args = cluster.services[node].command as string[];
      const flag = (name: string) => args[args.indexOf(name) + 1];
      expect(args).toContain("-js");
      expect(flag("-n")).toBe(node);
      expect(flag("--cluster_name")).toBe("mailroom");
      expect(flag("--cluster")).toBe("nats://0.0.0.0:6222");
      expect(flag("--routes").split(",").sort()).toEqual(NATS_NODES.filter((n) => n !== node).map((n) => `nats://${n}:6222`));
      expect(cluster.services[node].healthcheck?.test.join(" ")).toContain("js-enabled-only=true");
    }
  });

  it("makes the three MongoDB members a replica set before any unit starts", () => {
    for (const member of MONGO_MEMBERS) expect(cluster.services[member].command).toEqual(["mongod", "--replSet", "rs0", "--bind_ip_all"]);
    const init = cluster.services["mongo-init"];
    const script = (init.command as string[]).join(" ");
    expect(script).toContain("rs.initiate");
    for (const member of MONGO_MEMBERS) expect(script).toContain(`${member}:27017`);
    for (const unit of availableUnits()) {
      expect(cluster.services[unit.name].depends_on?.["mongo-init"]?.condition, unit.name).toBe("service_completed_successfully");
    }
  });
});
