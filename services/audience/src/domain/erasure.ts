import type { Contacts } from "./contacts.js";
import type { Contact } from "@mailroom/records/model.js";
import type { ContactEventRepository } from "@mailroom/records/ports.js";
import type { Suppressions } from "./suppression.js";

/**
 * A contact's erasure (DELETE /v1/contacts/:id?erase=true, DESIGN §9.3): what the audience unit
 * holds about the person goes, except a hashed suppression of the address, so a later send to
 * it is still suppressed while the address is no longer kept. The steps run in an order that a
 * retry can finish: the hashed suppression first (mail stays blocked whatever happens next),
 * then the events, the contact last (its deletion announces CONTACT_DELETED, as any delete).
 * The email service's records to the address are the gateway's other call.
 */
export class Erasure {
  constructor(
    private readonly contacts: Contacts,
    private readonly events: ContactEventRepository,
    private readonly suppressions: Suppressions,
  ) {}

  /** By id, or by address when no id is given; answers the contact as it was. */
  async eraseContact(workspaceId: string, email: string, contactId?: string): Promise<{ contact: Contact; eventsErased: number }> {
    const contact = contactId ? await this.contacts.getById(workspaceId, contactId) : await this.contacts.get(workspaceId, email);
    await this.suppressions.erase(workspaceId, contact.emailLower);
    const eventsErased = await this.events.deleteForContact(workspaceId, contact._id, contact.emailLower);
    await this.contacts.delete(workspaceId, contact.email, contact._id);
    return { contact, eventsErased };
  }
}
