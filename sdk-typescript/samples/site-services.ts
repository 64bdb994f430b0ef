// Stand-ins for the external services of the site-creation sample: a file-system
// service, a database service and the WordPress bootstrap API. They fail at random (a
// seeded generator, so a run repeats), half the time after the effect took place, like
// a lost reply; and they apply each (operation, idempotency key) once, as real services
// with idempotency keys do, so XDB's retries never create a resource twice.

export type Operation = "CREATE_FILE_SYSTEM" | "CREATE_DATABASE" | "BOOTSTRAP" | "DELETE_FILE_SYSTEM" | "DROP_DATABASE";

export interface SiteResources { fileSystem: boolean; database: boolean; bootstrapped: boolean }

export class SiteServices {
  readonly sites = new Map<string, SiteResources>();
  /** How many times each operation took effect per site (a repeat with the same key counts once). */
  readonly effects = new Map<string, number>();
  readonly failures: string[] = [];
  /** Operations that fail every time, as a service that is down. */
  readonly down = new Set<Operation>();
  private readonly applied = new Set<string>();
  private rng: number;

  constructor(private readonly failureRate = 0, seed = 1) {
    this.rng = seed >>> 0;
  }

  call(operation: Operation, siteId: string, idempotencyKey: string): void {
    const key = `${operation}/${idempotencyKey}`;
    if (this.applied.has(key)) return;
    if (operation === "BOOTSTRAP" && !this.resources(siteId).database) {
      throw new Error(`wordpress api: site ${siteId} has no database to bootstrap`);
    }
    if (this.down.has(operation)) throw new Error(`${operation} failed for site ${siteId}: the service is down`);
    const fails = this.random() < this.failureRate;
    const applyAnyway = fails && this.random() < 0.5;
    if (!fails || applyAnyway) this.apply(operation, siteId, key);
    if (fails) {
      this.failures.push(`${operation}/${siteId}`);
      throw new Error(`${operation} failed for site ${siteId}${applyAnyway ? " (after taking effect)" : ""}`);
    }
  }

  resources(siteId: string): SiteResources {
    let site = this.sites.get(siteId);
    if (!site) this.sites.set(siteId, (site = { fileSystem: false, database: false, bootstrapped: false }));
    return site;
  }

  private apply(operation: Operation, siteId: string, key: string): void {
    this.applied.add(key);
    const site = this.resources(siteId);
    const effect = `${siteId}/${operation}`;
    this.effects.set(effect, (this.effects.get(effect) ?? 0) + 1);
    if (operation === "CREATE_FILE_SYSTEM") site.fileSystem = true;
    if (operation === "DELETE_FILE_SYSTEM") site.fileSystem = false;
    if (operation === "CREATE_DATABASE") site.database = true;
    if (operation === "BOOTSTRAP") site.bootstrapped = true;
    if (operation === "DROP_DATABASE") Object.assign(site, { database: false, bootstrapped: false });
  }

  /** mulberry32: small, seeded, good enough to pick failures. */
  private random(): number {
    let t = (this.rng = (this.rng + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}
