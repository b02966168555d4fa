/**
 * Test support for the gateway's route suites: calls a built gateway and validates each answer
 * against the response its generated OpenAPI document promises for that operation and status,
 * and says afterwards which documented responses no call drove. (Imported only by tests.)
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";

// ajv-formats is CommonJS; under NodeNext its default export arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;
type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string; content?: Record<string, { schema?: Schema }> }> }>>;
  components: { schemas: Record<string, Schema>; responses: Record<string, { content?: Record<string, { schema?: Schema }> }> };
}

const SCHEMAS_ID = "https://mailroom.dev/openapi/schemas";

function rewriteRefs<T>(node: T): T {
  if (Array.isArray(node)) return node.map(rewriteRefs) as T;
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === "$ref" && typeof v === "string" ? v.replace("#/components/schemas/", `${SCHEMAS_ID}#/$defs/`) : rewriteRefs(v)])) as T;
}

export interface DocumentedCalls {
  /** `op` is "METHOD /openapi/path"; the answer's JSON is `data`. Throws when the answer is undocumented or off its schema. */
  call(op: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse & { data: any }>;
  /** Documented responses (not shared `$ref` ones) of the paths `which` selects that no call has answered with. */
  undriven(which: (path: string) => boolean): string[];
}

export async function documentedCalls(app: FastifyInstance, defaultHeaders: Record<string, string>): Promise<DocumentedCalls> {
  const doc = (await app.inject({ method: "GET", url: "/openapi.json" })).json() as Doc;
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: SCHEMAS_ID, $defs: rewriteRefs(doc.components.schemas) });
  const validators = new Map<string, ValidateFunction>();
  const covered = new Set<string>();
  return {
    async call(op, url, body, headers = defaultHeaders) {
      const [method, path] = op.split(" ");
      const res = await app.inject({
        method: method as "GET",
        url,
        headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        payload: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
      let documented = doc.paths[path]?.[method.toLowerCase()]?.responses[String(res.statusCode)];
      if (!documented) throw new Error(`${op} answered ${res.statusCode}, not documented: ${res.body.slice(0, 300)}`);
      if (documented.$ref) documented = doc.components.responses[documented.$ref.split("/").pop()!];
      else covered.add(`${op} ${res.statusCode}`);
      const schema = documented!.content?.["application/json"]?.schema;
      const data = res.json();
      if (schema) {
        const key = JSON.stringify(schema);
        let v = validators.get(key);
        if (!v) validators.set(key, (v = ajv.compile(rewriteRefs(schema))));
        if (!v(data)) throw new Error(`${op} ${res.statusCode}: ${ajv.errorsText(v.errors)}\n${res.body.slice(0, 500)}`);
      }
      return Object.assign(res, { data });
    },
    undriven(which) {
      const missing: string[] = [];
      for (const [path, item] of Object.entries(doc.paths).filter(([p]) => which(p))) {
        for (const [method, o] of Object.entries(item)) {
          for (const [status, r] of Object.entries(o.responses)) {
            const key = `${method.toUpperCase()} ${path} ${status}`;
            if (!r.$ref && !covered.has(key)) missing.push(key);
          }
        }
      }
      return missing;
    },
  };
}
