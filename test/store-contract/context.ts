/** What every case of the store contract gets: the store under test and a fresh collection per test. */
import type { Collection, Doc, Store } from "@mailroom/store/port.js";

export type Item = Doc & Record<string, any>;

export interface ContractContext {
  /** The store under test (opened before the cases run). */
  store: () => Store;
  /** A collection of its own for one test, so a store backed by a shared server needs no cleanup. */
  fresh: () => Collection<Item>;
  ids: (docs: Item[]) => string[];
}
