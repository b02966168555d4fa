import { badRequest, conflict } from "../../kit/src/errors.js";
import { DuplicateKeyError } from "../../kit/src/store/port.js";
import { scopedId, type DirectoryRepos, type PropertyDoc, type PropertyType, type PropertyValue } from "./store.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export const PROPERTY_TYPES: readonly PropertyType[] = ["string", "number", "boolean", "date"];
/** Contact fields every workspace has; merge variables of the same name resolve to them. */
export const BUILT_IN_PROPERTIES = ["firstName", "lastName", "email"] as const;
/** Names the renderer fills itself; a custom property may not shadow them. */
export const SYSTEM_VARIABLES = ["unsubscribeUrl", "manageUrl", "contactId"] as const;
const SLUG = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const MAX_STRING = 10_000;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

export interface PropertyView {
  slug: string;
  type: PropertyType;
  builtIn: boolean;
}

export function parsePropertyType(raw: unknown): PropertyType {
  if (typeof raw === "string" && (PROPERTY_TYPES as string[]).includes(raw)) return raw as PropertyType;
  throw badRequest("invalid_property_type", `Unknown property type ${JSON.stringify(raw)}; use one of ${PROPERTY_TYPES.join(", ")}`);
}

export function checkSlug(slug: string): string {
  if (typeof slug !== "string" || !SLUG.test(slug)) {
    throw badRequest("invalid_property_slug", `Property slug ${JSON.stringify(slug)} must start with a letter and hold only letters, digits and "_" (max 64)`);
  }
  if ((BUILT_IN_PROPERTIES as readonly string[]).includes(slug) || (SYSTEM_VARIABLES as readonly string[]).includes(slug)) {
    throw badRequest("reserved_property_slug", `"${slug}" is a built-in name and cannot be a custom property`);
  }
  return slug;
}

/** Checks a JSON value against a property type; dates are normalised to ISO 8601 UTC. */
export function validatePropertyValue(slug: string, type: PropertyType, value: unknown): PropertyValue {
  const invalid = (what: string) =>
    badRequest("invalid_property_value", `Property "${slug}" is of type ${type}; ${JSON.stringify(value)?.slice(0, 100)} ${what}`);
  switch (type) {
    case "string":
      if (typeof value !== "string") throw invalid("is not a string");
      if (value.length > MAX_STRING) throw invalid(`is longer than ${MAX_STRING} characters`);
      return value;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) throw invalid("is not a finite number");
      return value;
    case "boolean":
      if (typeof value !== "boolean") throw invalid("is not a boolean");
      return value;
    case "date": {
      if (typeof value !== "string" || !ISO_DATE.test(value.trim())) throw invalid("is not an ISO 8601 date");
      const d = new Date(value.trim());
      if (Number.isNaN(d.getTime())) throw invalid("is not a valid date");
      return d.toISOString();
    }
  }
}

/** Turns CSV text into a typed value (empty text means "no value"). */
export function coercePropertyText(slug: string, type: PropertyType, text: string): PropertyValue | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  switch (type) {
    case "string":
      return validatePropertyValue(slug, type, text);
    case "number":
      return validatePropertyValue(slug, type, /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) ? Number(t) : t);
    case "boolean": {
      const l = t.toLowerCase();
      if (["true", "yes", "1", "y"].includes(l)) return true;
      if (["false", "no", "0", "n"].includes(l)) return false;
      return validatePropertyValue(slug, type, t);
    }
    case "date":
      return validatePropertyValue(slug, type, t);
  }
}

/** Type of a new property created from a value (transactional contactProperties). */
export function inferPropertyType(value: unknown): PropertyType | undefined {
  if (typeof value === "string") return "string";
  if (typeof value === "number" && Number.isFinite(value)) return "number";
  if (typeof value === "boolean") return "boolean";
  return undefined;
}

export class ContactProperties {
  constructor(
    private readonly repos: DirectoryRepos,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
  ) {}

  async create(workspaceId: string, slugInput: string, typeInput: unknown): Promise<PropertyView> {
    await this.workspaces.get(workspaceId);
    const slug = checkSlug(slugInput);
    const type = parsePropertyType(typeInput);
    const doc: PropertyDoc = { _id: scopedId(workspaceId, slug), workspaceId, slug, type, createdAt: this.now() };
    try {
      await this.repos.properties.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw conflict("property_exists", `Contact property "${slug}" already exists`);
      throw err;
    }
    return { slug, type, builtIn: false };
  }

  /** Idempotent create: fine when it exists with the same type, 409 with another. */
  async ensure(workspaceId: string, slugInput: string, typeInput: unknown): Promise<PropertyView> {
    const slug = checkSlug(slugInput);
    const type = parsePropertyType(typeInput);
    const existing = await this.repos.properties.findOne({ _id: scopedId(workspaceId, slug) });
    if (existing) {
      if (existing.type !== type) throw conflict("property_exists", `Contact property "${slug}" exists with type ${existing.type}, not ${type}`);
      return { slug, type, builtIn: false };
    }
    try {
      return await this.create(workspaceId, slug, type);
    } catch (err) {
      const again = await this.repos.properties.findOne({ _id: scopedId(workspaceId, slug) });
      if (again?.type === type) return { slug, type, builtIn: false };
      throw err;
    }
  }

  /** Custom properties by slug. */
  async customTypes(workspaceId: string): Promise<Map<string, PropertyType>> {
    const docs = await this.repos.properties.find({ workspaceId: requireWorkspaceId(workspaceId) }, { limit: 10_000 });
    return new Map(docs.map((d) => [d.slug, d.type]));
  }

  async list(workspaceId: string): Promise<PropertyView[]> {
    const custom = await this.repos.properties.find({ workspaceId: requireWorkspaceId(workspaceId) }, { sort: { _id: 1 }, limit: 10_000 });
    return [
      ...BUILT_IN_PROPERTIES.map((slug) => ({ slug, type: "string" as const, builtIn: true })),
      ...custom.map((d) => ({ slug: d.slug, type: d.type, builtIn: false })),
    ];
  }
}
