import { ContactProperties } from "./properties.js";
import { Contacts } from "./contacts.js";
import { ContactEvents } from "./events.js";
import { Erasure } from "./erasure.js";
import { Suppressions } from "./suppression.js";
import { MailOutcomes } from "./outcomes.js";
import { ContactBootstrap } from "./contact-bootstrap.js";
import type { AudienceRepositories, ContactEventPublisher } from "@mailroom/records/ports.js";
import { systemClock, type Clock } from "@mailroom/records/validation.js";
import type { ChangeIntentRecorder, DirectoryEventPublisher } from "@mailroom/records/change-events.js";
import { EmittingSuppressionStore } from "./suppression-events.js";
import { EmittingContactStore, EmittingPropertyStore } from "./changes.js";
import type { UsageReserver, WorkspaceLookup } from "@mailroom/records/account-ports.js";

export interface AudienceDeps {
  repositories: AudienceRepositories;
  /** The accounts unit's workspaces (existence, time zone, limits). */
  workspaces: WorkspaceLookup;
  /** The accounts unit's usage reservation (ReserveSendable). */
  usage: UsageReserver;
  /** Where accepted contact events are announced (the event stream); none in unit tests. */
  publishEvent?: ContactEventPublisher;
  /** Where contact, property and suppression changes are announced once written (webhooks; changes.ts). */
  publishChanges?: DirectoryEventPublisher;
  /** Records each write's intent before it (with publishChanges: events survive a crash between a write and their record). */
  intendChanges?: ChangeIntentRecorder;
  now?: Clock;
}

/** Every use case of the audience unit's contacts, built over its ports. */
export interface Audience {
  properties: ContactProperties;
  contacts: Contacts;
  events: ContactEvents;
  suppressions: Suppressions;
  /** A contact's erasure: its events gone, its address kept only as a hashed suppression. */
  erasure: Erasure;
  /** Bounces, complaints and unsubscribes → suppressions and contact status. */
  outcomes: MailOutcomes;
  /** A bootstrap document's contact properties and contacts (the accounts unit applies the rest). */
  bootstrap: ContactBootstrap;
  usage: UsageReserver;
  workspaces: WorkspaceLookup;
}

export function createAudience(deps: AudienceDeps): Audience {
  const now = deps.now ?? systemClock;
  const publish = deps.publishChanges;
  // Emission lives at the write: every use case below writes through these.
  const repos = publish
    ? {
        ...deps.repositories,
        contacts: new EmittingContactStore(deps.repositories.contacts, publish, now, deps.intendChanges),
        properties: new EmittingPropertyStore(deps.repositories.properties, publish, deps.intendChanges, now),
        suppressions: new EmittingSuppressionStore(deps.repositories.suppressions, publish, now, deps.intendChanges),
      }
    : deps.repositories;
  const workspaces = deps.workspaces;
  const properties = new ContactProperties(repos.properties, workspaces, now);
  const contacts = new Contacts(repos.contacts, repos.suppressions, workspaces, properties, now);
  const suppressions = new Suppressions(repos.suppressions, repos.contacts, now);
  const outcomes = new MailOutcomes(suppressions, repos.contacts, now);
  const events = new ContactEvents(repos.contactEvents, contacts, workspaces, deps.publishEvent, now);
  const bootstrap = new ContactBootstrap((lookup) => {
    const scoped = new ContactProperties(repos.properties, lookup, now);
    return { properties: scoped, contacts: new Contacts(repos.contacts, repos.suppressions, lookup, scoped, now) };
  }, workspaces);
  const erasure = new Erasure(contacts, repos.contactEvents, suppressions);
  return { properties, contacts, events, suppressions, erasure, outcomes, bootstrap, usage: deps.usage, workspaces };
}
