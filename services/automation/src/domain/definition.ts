/**
 * Parsing and validating an automation definition (DESIGN §9.6). Pure: the shape is checked
 * here; what only the directory knows (templates, groups, properties, filters) is listed by
 * `references` with the path of each, for the caller to check and report.
 */
import type { Definition, DefinitionError, FilterJson, Reentry, Step, Trigger } from "./model.js";

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: DefinitionError };

/** The trigger object as sent (`trigger`). */
export declare function parseTrigger(input: unknown): Parsed<Trigger>;
/** The steps array as sent (`steps`): every id unique in the automation, every field checked. */
export declare function parseSteps(input: unknown): Parsed<Step[]>;
/** `reentry` as sent; undefined is "once". */
export declare function parseReentry(input: unknown): Parsed<Reentry>;
/** All three; the first error found, in the order trigger, steps, reentry. */
export declare function parseDefinition(input: { trigger: unknown; steps: unknown; reentry?: unknown }): Parsed<Definition>;

/** Something a definition names that the directory must confirm, with where it is named. */
export type Reference =
  | { kind: "template"; name: string; path: string }
  | { kind: "group"; id: string; path: string }
  | { kind: "property"; slug: string; path: string }
  | { kind: "filter"; filter: FilterJson; path: string };

/** Every reference of the definition, trigger first, then steps depth first. */
export declare function references(def: Definition): Reference[];
