import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import type { DescMessage, DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { isAudited, READ, type FieldPath } from "./audit.js";
import { AUDIT_TABLE } from "./audit-table.js";

const GEN = join(import.meta.dirname, "..", "..", "..", "gen", "mailroom");

/** Every service of every generated proto file, found on disk so a new one is never missed. */
async function allServices(): Promise<DescService[]> {
  const files = readdirSync(GEN, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("_pb.ts"));
  const services: DescService[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(GEN, file)).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if (value && typeof value === "object" && (value as DescService).kind === "service") services.push(value as DescService);
    }
  }
  expect(services.length, `services under ${relative(process.cwd(), GEN)}`).toBeGreaterThan(10);
  return services;
}

describe("the audit table", () => {
  it("has a row for every RPC of every service (a read, an audited change, or a change not audited with its reason)", async () => {
    const missing: string[] = [];
    const known = new Set<string>();
    for (const service of await allServices()) {
      for (const method of service.methods) {
        const key = `${service.typeName}/${method.name}`;
        known.add(key);
        if (!(key in AUDIT_TABLE)) missing.push(key);
      }
    }
    expect(missing, "RPCs without a row in services/kit/src/audit-table.ts").toEqual([]);
    expect(Object.keys(AUDIT_TABLE).filter((key) => !known.has(key)), "rows naming no RPC").toEqual([]);
  });

  it("every audited change names an action <resource>.<verb> and a resource; every exception gives its reason", () => {
    for (const [key, rule] of Object.entries(AUDIT_TABLE)) {
      if (rule === READ) continue;
      if (isAudited(rule)) {
        expect(rule.action, key).toMatch(/^[a-z_]+\.[a-z_]+$/);
        expect(rule.resource, key).toMatch(/^[a-z_]+$/);
      } else {
        expect(rule.notAudited.length, key).toBeGreaterThan(10);
      }
    }
  });

  it("every path a row reads (resource id, workspace, member actor) names a field of the request or the answer", async () => {
    const wrong: string[] = [];
    const resolves = (message: DescMessage, parts: string[]): boolean => {
      const field = message.fields.find((f) => f.localName === parts[0]);
      if (!field) return false;
      if (parts.length === 1) return field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar");
      return field.fieldKind === "message" && resolves(field.message, parts.slice(1));
    };
    for (const service of await allServices()) {
      for (const method of service.methods) {
        const rule = AUDIT_TABLE[`${service.typeName}/${method.name}`];
        if (!isAudited(rule)) continue;
        const paths: FieldPath[] = [...rule.id, ...(rule.workspace ? [rule.workspace] : []), ...(rule.memberActor ? [rule.memberActor] : [])];
        for (const path of paths) {
          const [side, ...parts] = path.split(".");
          if (!resolves(side === "req" ? method.input : method.output, parts)) wrong.push(`${service.typeName}/${method.name}: ${path}`);
        }
        // The workspace is read from req.workspaceId unless the row says where.
        if (!rule.workspace && !method.input.fields.some((f) => f.localName === "workspaceId")) wrong.push(`${service.typeName}/${method.name}: no req.workspaceId`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("streaming RPCs are reads (the interceptor records unary calls only)", async () => {
    for (const service of await allServices()) {
      for (const method of service.methods) {
        if (method.methodKind !== "unary") expect(AUDIT_TABLE[`${service.typeName}/${method.name}`], method.name).toBe(READ);
      }
    }
  });
});
