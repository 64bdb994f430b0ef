// The site-creation sample against xdb-server on PostgreSQL and MariaDB: parallel
// branches joined on a local queue, retries of failing services without creating
// anything twice, and a deletion stopping a creation in flight.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService } from "@xdb/sdk";

import { SiteCreationProcess, deleteSite, processId, startSiteCreation } from "../../samples/site-creation.js";
import { SiteServices } from "../../samples/site-services.js";
import { DIALECTS, TestEnv, eventually } from "./harness.js";

for (const dialect of DIALECTS) {
  describe(`site creation on ${dialect}`, () => {
    let env: TestEnv;
    let client: Client;

    before(async () => {
      env = await TestEnv.start(dialect, "site");
      client = new Client({ serviceUrl: env.server.url });
    });
    after(async () => {
      await env?.stop();
    });

    async function host(process: SiteCreationProcess): Promise<Client> {
      const worker = await env.worker(new WorkerService({ onError: () => undefined }).register(process).nodeHandler());
      return new Client({ serviceUrl: env.server.url, workerUrl: worker.url });
    }

    it("creates a site through failing services, each effect once", async () => {
      const services = new SiteServices(0.4, 7);
      const process = new SiteCreationProcess(services);
      const siteClient = await host(process);
      await startSiteCreation(siteClient, process, "s1", "My blog");
      const done = await client.waitForCompletion(processId("s1"), { timeoutMs: 60_000 });
      assert.equal(done.status, "COMPLETED", JSON.stringify(done.failure));
      assert.equal(done.output, "created");
      const row = await env.db.row("site", "site_id", "s1");
      assert.equal(row?.status, "created");
      assert.equal(row?.name, "My blog");
      for (const step of ["metadata_status", "fs_status", "db_status", "bootstrap_status"]) {
        assert.equal(row?.[step], "done", step);
      }
      assert.deepEqual(services.resources("s1"), { fileSystem: true, database: true, bootstrapped: true });
      for (const operation of ["CREATE_FILE_SYSTEM", "CREATE_DATABASE", "BOOTSTRAP"]) {
        assert.equal(services.effects.get(`s1/${operation}`), 1, operation);
      }
    });

    it("deletes a site whose creation is stuck, ending every thread", async () => {
      const services = new SiteServices();
      services.down.add("CREATE_DATABASE");
      const process = new SiteCreationProcess(services, { seconds: 1 }); // the grace keeps the second call in it
      const siteClient = await host(process);
      await startSiteCreation(siteClient, process, "s2", "Doomed");
      await eventually("the file system branch", 20_000, async () => (await env.db.row("site", "site_id", "s2"))?.fs_status === "done");
      assert.equal(await deleteSite(siteClient, process, "s2"), "deleting");
      assert.equal(await deleteSite(siteClient, process, "s2"), "already_deleting");
      const done = await client.waitForCompletion(processId("s2"), { timeoutMs: 20_000 });
      assert.equal(done.status, "COMPLETED");
      assert.equal(done.output, "deleted");
      const row = await env.db.row("site", "site_id", "s2");
      assert.equal(row?.status, "deleted");
      assert.equal(row?.db_status, null);
      assert.deepEqual(services.resources("s2"), { fileSystem: false, database: false, bootstrapped: false });
    });
  });
}
