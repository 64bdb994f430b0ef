// The sign-up sample end to end against xdb-server on PostgreSQL and MariaDB: the
// reminder timer, the locked RPC, the local queue, completion, and the user's row.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService, isApiError } from "@xdb/sdk";

import { UserSignupProcess, processId, startUserSignup, verifyByRpc, type EmailKind } from "../../samples/user-signup.js";
import { DIALECTS, TestEnv, eventually, type TestWorker } from "./harness.js";

interface Email { to: string; kind: EmailKind; key: string }

/** Emails "sent", once per (idempotency key, kind), as an email API with idempotency keys would. */
class Outbox {
  readonly sent: Email[] = [];
  readonly send = (to: string, kind: EmailKind, key: string): void => {
    if (!this.sent.some((e) => e.key === key && e.kind === kind)) this.sent.push({ to, kind, key });
  };
  kinds(to: string): EmailKind[] {
    return this.sent.filter((e) => e.to === to).map((e) => e.kind);
  }
}

/** A JSON column as read back: an object on PostgreSQL, text on MariaDB. */
function json(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}

for (const dialect of DIALECTS) {
  describe(`user sign-up on ${dialect}`, () => {
    let env: TestEnv;
    let worker: TestWorker;
    let client: Client;
    const outbox = new Outbox();

    before(async () => {
      env = await TestEnv.start(dialect, "signup");
      const service = new WorkerService().register(new UserSignupProcess(outbox.send, { seconds: 1 }));
      worker = await env.worker(service.nodeHandler());
      client = new Client({ serviceUrl: env.server.url, workerUrl: worker.url });
    });
    after(async () => {
      await env?.stop();
    });

    it("reminds on the timer, verifies through the locked RPC and completes", async () => {
      const form = { email: "ann@example.com", name: "Ann" };
      const exec = await startUserSignup(client, "ann", form);

      // The start transaction wrote the user's row.
      const started = await env.db.row("user", "user_id", "ann");
      assert.deepEqual(json(started?.form), form);
      assert.equal(started?.status, "waiting");
      assert.equal(started?.source, null);

      // SubmitState emails the link; VerifyState's 1 s timer fires and reminds.
      await eventually("a reminder after the verification email", 20_000, () =>
        outbox.kinds("ann@example.com").includes("reminder"),
      );
      assert.equal(outbox.kinds("ann@example.com")[0], "verification");
      const running = await client.describe(processId("ann"));
      assert.equal(running.processExecutionId, exec);
      assert.equal(running.status, "RUNNING");
      assert.equal(running.processType, "UserSignupProcess");
      assert.ok((await client.history(processId("ann"))).events.some((e) => e.eventType === "TIMER_FIRED"));

      // Two verifications at once: the row lock lets exactly one see "waiting".
      const sources = ["email", "sms"];
      const answers = await Promise.all(sources.map((source) => verifyByRpc(client, "ann", source)));
      assert.deepEqual([...answers].sort(), ["already verified", "done"]);
      const winner = sources[answers.indexOf("done")];

      const done = await client.waitForCompletion<string>(processId("ann"), { timeoutMs: 20_000 });
      assert.equal(done.timedOut, false);
      assert.equal(done.status, "COMPLETED");
      assert.equal(done.processExecutionId, exec);
      assert.equal(done.output, "done");

      const verified = await env.db.row("user", "user_id", "ann");
      assert.equal(verified?.status, "verified");
      assert.equal(verified?.source, winner);
      assert.deepEqual(json(verified?.form), form, "the form column is left as it was");
      const kinds = outbox.kinds("ann@example.com");
      assert.equal(kinds.filter((k) => k === "verification").length, 1);
      assert.equal(kinds.filter((k) => k === "welcome").length, 1);
      assert.equal(kinds.at(-1), "welcome");

      const whole = (await client.history(processId("ann"), exec)).events;
      const history = whole.map((e) => e.eventType);
      // A page at a time, and filtered by one type: the same events as the whole history.
      const first = await client.history(processId("ann"), { processExecutionId: exec, pageSize: 1 });
      assert.deepEqual(first.events, whole.slice(0, 1));
      assert.equal(first.nextAfterEventId, whole[0]?.eventId);
      const paged = [];
      for await (const event of client.historyEvents(processId("ann"), { processExecutionId: exec, pageSize: 1 })) paged.push(event);
      assert.deepEqual(paged, whole);
      const timers = [];
      for await (const event of client.historyEvents(processId("ann"), { pageSize: 1, eventTypes: ["TIMER_FIRED"] })) timers.push(event);
      assert.deepEqual(timers, whole.filter((e) => e.eventType === "TIMER_FIRED"));
      assert.ok(timers.length > 0);
      assert.equal(history[0], "PROCESS_STARTED");
      for (const event of ["WAIT_UNTIL_COMPLETED", "TIMER_FIRED", "LOCAL_QUEUE_MESSAGES_CONSUMED", "EXECUTE_COMPLETED"]) {
        assert.ok(history.includes(event), `${event} in ${history.join(", ")}`);
      }
      const listed = await client.list({ filter: { processId: processId("ann") } });
      assert.deepEqual(
        listed.executions.map((e) => [e.processExecutionId, e.status]),
        [[exec, "COMPLETED"]],
      );

      // The process is closed: a further RPC is refused with a typed error.
      await assert.rejects(verifyByRpc(client, "ann", "email"), (error: unknown) => {
        assert.ok(isApiError(error), String(error));
        assert.equal(error.subType, "PROCESS_NOT_RUNNING");
        assert.equal(error.status, 409);
        return true;
      });
    });

    it("verifies by a message on local queue verify", async () => {
      await startUserSignup(client, "bob", { email: "bob@example.com" });
      await eventually("the verification email", 20_000, () => outbox.kinds("bob@example.com").length > 0);
      await client.publishToLocalQueue(processId("bob"), "verify", { source: "email-link" }, { dedupId: "click-1" });
      // The duplicate is dropped, or refused when the first message completed the process already.
      await client
        .publishToLocalQueue(processId("bob"), "verify", { source: "email-link" }, { dedupId: "click-1" })
        .catch((error: unknown) => {
          if (!isApiError(error, "PROCESS_NOT_RUNNING")) throw error;
        });
      const done = await client.waitForCompletion(processId("bob"), { timeoutMs: 20_000 });
      assert.equal(done.status, "COMPLETED");
      const row = await env.db.row("user", "user_id", "bob");
      assert.equal(row?.status, "verified");
      assert.equal(row?.source, "email-link");
      assert.equal(outbox.kinds("bob@example.com").filter((k) => k === "welcome").length, 1);
    });

    it("refuses a second start under DISALLOW_REUSE, and stops", async () => {
      const exec = await startUserSignup(client, "cy", { email: "cy@example.com" });
      await assert.rejects(
        client.startProcess(UserSignupProcess, processId("cy"), undefined, {
          globalAttributePkValue: "cy",
          idReusePolicy: "DISALLOW_REUSE",
        }),
        (error: unknown) => isApiError(error, "PROCESS_ALREADY_STARTED") && error.status === 409,
      );
      await client.stop(processId("cy"), { reason: "test" });
      const stopped = await client.describe(processId("cy"));
      assert.equal(stopped.processExecutionId, exec);
      assert.equal(stopped.status, "TERMINATED");
      await assert.rejects(client.describe("no-such-process"), (error: unknown) =>
        isApiError(error, "PROCESS_NOT_FOUND") && error.status === 404,
      );
    });
  });
}
