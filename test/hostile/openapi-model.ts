import { Agent, request } from "node:http";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/**
 * The gateway's generated OpenAPI document as the suite's one source of routes: operations,
 * their parameters and body schemas, and Ajv validators for any schema inside the document.
 */

export type Schema = Record<string, any>;
export interface OpenApiDoc { paths: Record<string, Record<string, any>>; components: Record<string, any> }

export interface Operation {
  method: string;
  /** The OpenAPI path template, e.g. /v1/contacts/{email}. */
  path: string;
  id: string;
  pathParams: Array<{ name: string; schema: Schema }>;
  queryParams: Array<{ name: string; schema: Schema }>;
  /** The JSON request body's schema, when the operation reads one. */
  jsonBody?: Schema;
  requestMedia: string[];
  requiresKey: boolean;
  /** JSON pointer of each documented response's JSON schema, by status. */
  responseSchemaPointers: Record<string, string>;
  /** Media types of each documented response, by status. */
  responseMedia: Record<string, string[]>;
}

const escapePointer = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");

export function resolve(doc: OpenApiDoc, node: any): any {
  let n = node;
  for (let i = 0; n && typeof n === "object" && typeof n.$ref === "string" && i < 20; i++) {
    n = n.$ref.slice(2).split("/").map((s: string) => s.replaceAll("~1", "/").replaceAll("~0", "~"))
      .reduce((acc: any, key: string) => acc?.[key], doc);
  }
  return n;
}

export function operationsOf(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const params = (op.parameters ?? []).map((p: any) => resolve(doc, p));
      const content = op.requestBody?.content ?? {};
      const responseSchemaPointers: Record<string, string> = {};
      const responseMedia: Record<string, string[]> = {};
      for (const [status, r] of Object.entries<any>(op.responses ?? {})) {
        responseMedia[status] = Object.keys(resolve(doc, r)?.content ?? {});
        const pointer = r.$ref ? `${r.$ref.slice(1)}` : `/paths/${escapePointer(path)}/${method}/responses/${status}`;
        if (resolve(doc, r)?.content?.["application/json"]?.schema) responseSchemaPointers[status] = `${pointer}/content/application~1json/schema`;
      }
      ops.push({
        method: method.toUpperCase(),
        path,
        id: `${method.toUpperCase()} ${path}`,
        pathParams: params.filter((p: any) => p.in === "path").map((p: any) => ({ name: p.name, schema: p.schema ?? {} })),
        queryParams: params.filter((p: any) => p.in === "query").map((p: any) => ({ name: p.name, schema: p.schema ?? {} })),
        jsonBody: content["application/json"]?.schema,
        requestMedia: Object.keys(content),
        // The document-wide default is the API key; `security: []` opts out.
        requiresKey: !(Array.isArray(op.security) && op.security.length === 0),
        responseSchemaPointers,
        responseMedia,
      });
    }
  }
  return ops;
}

/** Validators for schemas inside the document, addressed by JSON pointer. */
export class DocValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  private readonly cache = new Map<string, ValidateFunction>();
  constructor(doc: OpenApiDoc) {
    addFormats.default(this.ajv);
    this.ajv.addSchema(doc as object, "openapi");
  }
  /** Validates `data` against the schema at `pointer`; returns the first errors as text, or undefined. */
  check(pointer: string, data: unknown): string | undefined {
    let v = this.cache.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `openapi#${pointer}` });
      this.cache.set(pointer, v);
    }
    return v(data) ? undefined : this.ajv.errorsText(v.errors?.slice(0, 3));
  }
}

export const ERROR_SCHEMA = "/components/schemas/ApiError";
export const UNAUTHORIZED_SCHEMA = "/components/schemas/UnauthorizedError";

export interface RawResponse { status: number; headers: Record<string, string | string[] | undefined>; text: string; json?: any }

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One request with full control of the path bytes, headers and body (fetch would normalise them). */
export function rawRequest(base: string, method: string, rawPath: string, headers: Record<string, string>, body?: Buffer, timeoutMs = 30_000, fresh = false): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolvePromise, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path: rawPath, headers: body ? { ...headers, "content-length": String(body.length) } : headers, agent: fresh ? false : agent, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}
