import { badRequest } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { EXTRA_BUILT_INS, type ContactProperty, type PropertyOption, type PropertyType, type PropertyValue } from "./model.js";

/** Contact properties' rules: types, slugs, option lists and values (the audience unit's properties, imports and forms). */

export const PROPERTY_TYPES: readonly PropertyType[] = ["string", "number", "boolean", "date", "select", "multi_select"];
/**
 * Contact fields every workspace has, by API slug; merge variables of the same name resolve
 * to them. They share the one `properties` object of the public contact with the custom ones.
 */
export const BUILT_IN_PROPERTIES = ["firstName", "lastName", "email", ...EXTRA_BUILT_INS, "status", "timezone"] as const;
/** Names the renderer fills itself; a custom property may not shadow them. */
export const SYSTEM_VARIABLES = ["unsubscribeUrl", "manageUrl", "contactId"] as const;
export const SLUG = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** STRING values: emails, URLs, phone numbers, short text (the public API's documented limit). */
export const MAX_STRING = 255;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const OPTION_COLORS = ["gray", "blue", "green", "yellow", "orange", "red", "purple", "pink"];
const MAX_OPTIONS = 100;
export const MAX_DISPLAY_NAME = 100;
export const MAX_DESCRIPTION = 1_000;

/** What a value is checked against. */
export interface PropertyDef {
  type: PropertyType;
  options?: PropertyOption[];
}

export interface PropertyView extends PropertyDef {
  id: string;
  slug: string;
  builtIn: boolean;
  displayName: string;
  description: string;
  createdAt?: Date;
  updatedAt?: Date;
}

export interface NewProperty {
  /** Derived from displayName when absent. */
  slug?: string;
  displayName?: string;
  description?: string;
  type: unknown;
  /** select / multi_select: the options' values. */
  options?: string[];
}

export function parsePropertyType(raw: unknown): PropertyType {
  const name = typeof raw === "string" ? raw.toLowerCase() : raw;
  if (typeof name === "string" && (PROPERTY_TYPES as string[]).includes(name)) return name as PropertyType;
  throw badRequest("invalid_property_type", `Unknown property type ${JSON.stringify(raw)}; use one of ${PROPERTY_TYPES.join(", ")}`);
}

export const isReserved = (slug: string) =>
  (BUILT_IN_PROPERTIES as readonly string[]).includes(slug) || (SYSTEM_VARIABLES as readonly string[]).includes(slug) || slug === "subscribed";

export function checkSlug(slug: string): string {
  if (typeof slug !== "string" || !SLUG.test(slug)) {
    throw badRequest("invalid_property_slug", `Property slug ${JSON.stringify(slug)} must start with a letter and hold only letters, digits and "_" (max 64)`);
  }
  if (isReserved(slug)) throw badRequest("reserved_property_slug", `"${slug}" is a built-in name and cannot be a custom property`);
  return slug;
}

/** "Company size (employees)" -> "companySizeEmployees"; "" when nothing usable is left. */
export function slugFromDisplayName(displayName: string): string {
  const words = displayName.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").split(/[^A-Za-z0-9]+/).filter(Boolean);
  let slug = words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0].toUpperCase() + w.slice(1).toLowerCase())).join("");
  if (slug && !/^[A-Za-z]/.test(slug)) slug = `p${slug}`;
  return slug.slice(0, 60);
}

export function checkText(field: string, value: unknown, max: number): string {
  if (typeof value !== "string" || value.length > max || /[\u0000-\u001f\u007f]/.test(value)) {
    throw badRequest("invalid_property", `${field} must be a string of at most ${max} characters without control characters`);
  }
  return value.trim();
}

export function buildOptions(values: unknown): PropertyOption[] {
  if (!Array.isArray(values) || !values.length) throw badRequest("invalid_property", "A select property needs typeConfig.options: a non-empty list of strings");
  if (values.length > MAX_OPTIONS) throw badRequest("invalid_property", `At most ${MAX_OPTIONS} options`);
  const seen = new Set<string>();
  return values.map((raw, i) => {
    const value = checkText(`options[${i}]`, raw, MAX_STRING);
    if (!value) throw badRequest("invalid_property", `options[${i}] is empty`);
    if (seen.has(value)) throw badRequest("invalid_property", `Option "${value}" is listed twice`);
    seen.add(value);
    return { id: newId("opt"), value, displayName: value, color: OPTION_COLORS[i % OPTION_COLORS.length] };
  });
}

/** The option a select value names (by value, else by id), or undefined. */
const optionOf = (def: PropertyDef, value: unknown) =>
  typeof value === "string" ? def.options?.find((o) => o.value === value) ?? def.options?.find((o) => o.id === value) : undefined;

/**
 * Checks a JSON value against a property; dates are normalised to ISO 8601 UTC, options to
 * their value. A multi-select takes an array (replaces) or `{ add, remove }` (edits `current`).
 */
export function validatePropertyValue(slug: string, def: PropertyDef | PropertyType, value: unknown, current?: PropertyValue): PropertyValue {
  const { type, options } = typeof def === "string" ? { type: def, options: undefined } : def;
  const invalid = (what: string) =>
    badRequest("invalid_property_value", `Property "${slug}" is of type ${type.toUpperCase()}; ${JSON.stringify(value)?.slice(0, 100)} ${what}`);
  const choices = () => (options ?? []).map((o) => o.value).join(", ");
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
    case "select": {
      const option = optionOf({ type, options }, value);
      if (!option) throw invalid(`is not one of its options (${choices()})`);
      return option.value;
    }
    case "multi_select": {
      const pick = (list: unknown): string[] => {
        if (!Array.isArray(list)) throw invalid("is not a list of its options");
        return list.map((item) => {
          const option = optionOf({ type, options }, item);
          if (!option) throw invalid(`holds ${JSON.stringify(item)?.slice(0, 60)}, not one of its options (${choices()})`);
          return option.value;
        });
      };
      if (Array.isArray(value)) return [...new Set(pick(value))];
      if (value && typeof value === "object") {
        const { add, remove, ...rest } = value as { add?: unknown; remove?: unknown };
        if (Object.keys(rest).length) throw invalid("is neither a list nor { add, remove }");
        const removed = new Set(remove === undefined ? [] : pick(remove));
        const kept = (Array.isArray(current) ? current : []).filter((v) => !removed.has(v));
        return [...new Set([...kept, ...(add === undefined ? [] : pick(add))])];
      }
      throw invalid("is not a list of its options");
    }
  }
}

/** Turns text (a CSV cell, a command-line value) into a typed value; empty text means "no value". */
export function coercePropertyText(slug: string, def: PropertyDef | PropertyType, text: string): PropertyValue | undefined {
  const { type } = typeof def === "string" ? { type: def } : def;
  const t = text.trim();
  if (t === "") return undefined;
  switch (type) {
    case "string":
      return validatePropertyValue(slug, def, text);
    case "number":
      return validatePropertyValue(slug, def, /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) ? Number(t) : t);
    case "boolean": {
      const l = t.toLowerCase();
      if (["true", "yes", "1", "y"].includes(l)) return true;
      if (["false", "no", "0", "n"].includes(l)) return false;
      return validatePropertyValue(slug, def, t);
    }
    case "date":
    case "select":
      return validatePropertyValue(slug, def, t);
    case "multi_select":
      return validatePropertyValue(slug, def, t.split(",").map((s) => s.trim()).filter(Boolean));
  }
}

/** Type of a new property created from a value (transactional contactProperties). */
export function inferPropertyType(value: unknown): PropertyType | undefined {
  if (typeof value === "string") return "string";
  if (typeof value === "number" && Number.isFinite(value)) return "number";
  if (typeof value === "boolean") return "boolean";
  return undefined;
}

const BUILT_IN_TYPES: Partial<Record<string, PropertyType>> = { birthday: "date", status: "select" };

export function builtInView(slug: string): PropertyView {
  const displayName = slug.replace(/([A-Z])/g, " $1").replace(/^./, (c) => c.toUpperCase());
  return { id: slug, slug, type: BUILT_IN_TYPES[slug] ?? "string", builtIn: true, displayName, description: "" };
}

export function propertyView(doc: ContactProperty): PropertyView {
  return {
    id: doc.publicId ?? doc.slug,
    slug: doc.slug,
    type: doc.type,
    options: doc.options,
    builtIn: false,
    displayName: doc.displayName || doc.slug,
    description: doc.description ?? "",
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}
