/** Test doubles every unit's tests use (imported by `testing.ts` files and tests only). */

/** A logger that drops everything, for domain code under test. */
export const silentLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** A clock that moves only when told: pacing, leases, retries and expiry under test. */
export class ManualClock {
  constructor(private t = Date.parse("2030-01-15T12:00:00Z")) {}
  now(): Date {
    return new Date(this.t);
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(at: Date | string): void {
    this.t = new Date(at).getTime();
  }
}
