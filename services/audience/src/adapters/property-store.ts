import type { Collection, Store } from "@mailroom/store/port.js";
import type { ContactProperty } from "@mailroom/records/model.js";
import type { PropertyRepository } from "@mailroom/records/ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

export class PropertyStore implements PropertyRepository {
  private constructor(private readonly properties: Collection<Stored<ContactProperty>>) {}

  static async open(store: Store): Promise<PropertyStore> {
    const properties = store.collection<Stored<ContactProperty>>("contact_properties");
    await Promise.all([
      properties.createIndex({ keys: { workspaceId: 1 } }),
      // PUT /v1/contact-properties/:id (older properties have no public id: sparse).
      properties.createIndex({ keys: { workspaceId: 1, publicId: 1 }, unique: true, sparse: true }),
    ]);
    return new PropertyStore(properties);
  }

  insert(property: ContactProperty): Promise<boolean> {
    return insertUnique(this.properties, asDoc(property));
  }

  find(id: string): Promise<ContactProperty | null> {
    return this.properties.findOne({ _id: id });
  }

  findByPublicId(workspaceId: string, publicId: string): Promise<ContactProperty | null> {
    return this.properties.findOne({ workspaceId, publicId });
  }

  update(id: string, changes: Partial<Pick<ContactProperty, "displayName" | "description" | "updatedAt">>): Promise<ContactProperty | null> {
    return this.properties.findOneAndUpdate({ _id: id }, { $set: changes }, { returnDocument: "after" });
  }

  list(workspaceId: string, limit: number): Promise<ContactProperty[]> {
    return this.properties.find({ workspaceId }, { sort: { _id: 1 }, limit });
  }
}
