import { badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { scopedId, type ContactProperty } from "@mailroom/records/model.js";
import type { PropertyRepository } from "@mailroom/records/ports.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";
import { BUILT_IN_PROPERTIES, builtInView, checkSlug, checkText, MAX_DESCRIPTION, MAX_DISPLAY_NAME, buildOptions, parsePropertyType, slugFromDisplayName, propertyView, isReserved, SLUG, type NewProperty, type PropertyDef, type PropertyView } from "@mailroom/records/properties.js";

export * from "@mailroom/records/properties.js";

export class ContactProperties {
  constructor(
    private readonly repo: PropertyRepository,
    private readonly workspaces: WorkspaceLookup,
    private readonly now: Clock = systemClock,
  ) {}

  /** Creates a custom property; the slug comes from the display name (made unique) when not given. */
  async create(workspaceId: string, input: NewProperty): Promise<PropertyView> {
    await this.workspaces.get(workspaceId);
    const type = parsePropertyType(input.type);
    const displayName = input.displayName === undefined ? undefined : checkText("displayName", input.displayName, MAX_DISPLAY_NAME);
    const description = input.description === undefined ? undefined : checkText("description", input.description, MAX_DESCRIPTION);
    const options = type === "select" || type === "multi_select" ? buildOptions(input.options) : undefined;
    if (!options && input.options?.length) throw badRequest("invalid_property", `Only SELECT and MULTI_SELECT properties have options`);
    const at = this.now();
    const doc = (slug: string): ContactProperty => ({
      _id: scopedId(workspaceId, slug),
      publicId: newId("cpr"),
      workspaceId,
      slug,
      type,
      ...(displayName ? { displayName } : {}),
      ...(description ? { description } : {}),
      ...(options ? { options } : {}),
      createdAt: at,
      updatedAt: at,
    });
    if (input.slug) {
      const slug = checkSlug(input.slug);
      if (!(await this.repo.insert(doc(slug)))) throw conflict("property_exists", `Contact property "${slug}" already exists`);
      return propertyView(doc(slug));
    }
    if (!displayName) throw badRequest("invalid_property", "displayName is required");
    const base = slugFromDisplayName(displayName);
    if (!base) throw badRequest("invalid_property", `displayName ${JSON.stringify(displayName)} holds no letters or digits to make an API slug from`);
    for (let n = 1; n < 100; n++) {
      const slug = n === 1 ? base : `${base}${n}`;
      if (isReserved(slug)) continue;
      const candidate = doc(slug);
      if (await this.repo.insert(candidate)) return propertyView(candidate);
    }
    throw conflict("property_exists", `Too many properties named like "${displayName}"`);
  }

  /** Changes the display name or description of a custom property (by public id or slug). */
  async update(workspaceId: string, id: string, changes: { displayName?: string; description?: string }): Promise<PropertyView> {
    requireWorkspaceId(workspaceId);
    const doc = (await this.repo.findByPublicId(workspaceId, id)) ?? (SLUG.test(id) ? await this.repo.find(scopedId(workspaceId, id)) : null);
    if (!doc) {
      if ((BUILT_IN_PROPERTIES as readonly string[]).includes(id)) throw badRequest("invalid_property", `"${id}" is a built-in property and cannot be changed`);
      throw notFound("property_not_found", `Contact property ${id} not found`);
    }
    const set: { displayName?: string; description?: string } = {};
    if (changes.displayName !== undefined) {
      set.displayName = checkText("displayName", changes.displayName, MAX_DISPLAY_NAME);
      if (!set.displayName) throw badRequest("invalid_property", "displayName cannot be empty");
    }
    if (changes.description !== undefined) set.description = checkText("description", changes.description, MAX_DESCRIPTION);
    if (!Object.keys(set).length) return propertyView(doc);
    const updated = await this.repo.update(doc._id, { ...set, updatedAt: this.now() });
    if (!updated) throw notFound("property_not_found", `Contact property ${id} not found`);
    return propertyView(updated);
  }

  /** Idempotent create of a plain-typed property: fine when it exists with the same type, 409 with another. */
  async ensure(workspaceId: string, slugInput: string, typeInput: unknown): Promise<PropertyView> {
    const slug = checkSlug(slugInput);
    const type = parsePropertyType(typeInput);
    const existing = await this.repo.find(scopedId(workspaceId, slug));
    if (existing) {
      if (existing.type !== type) throw conflict("property_exists", `Contact property "${slug}" exists with type ${existing.type}, not ${type}`);
      return propertyView(existing);
    }
    try {
      return await this.create(workspaceId, { slug, type });
    } catch (err) {
      const again = await this.repo.find(scopedId(workspaceId, slug));
      if (again?.type === type) return propertyView(again);
      throw err;
    }
  }

  /** Custom properties by slug. */
  async customTypes(workspaceId: string): Promise<Map<string, PropertyDef>> {
    const docs = await this.repo.list(requireWorkspaceId(workspaceId), 10_000);
    return new Map(docs.map((d) => [d.slug, { type: d.type, options: d.options }]));
  }

  /** Built-ins first, then the custom properties by slug. */
  async list(workspaceId: string): Promise<PropertyView[]> {
    const custom = await this.repo.list(requireWorkspaceId(workspaceId), 10_000);
    return [...BUILT_IN_PROPERTIES.map(builtInView), ...custom.map(propertyView)];
  }
}
