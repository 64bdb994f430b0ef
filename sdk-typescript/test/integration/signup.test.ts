// The sign-up sample end to end against xdb-server on PostgreSQL and MariaDB: the
// reminder timer, the locked RPC, the local queue, completion, and the user's row. The
// RPC's message reaches VerifyState in both orders, each forced: queued before the
// state's wait begins (a gate holds the waitUntil call), and during the wait.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService, isApiError } from "@xdb/sdk";

import { UserSignupProcess, processId, startUserSignup, verifyByRpc, type EmailKind } from "../../samples/user-signup.js";
import { CallGate, waitUntilOf } from "./gate.js";
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

type HistoryEvent = Awaited<ReturnType<Client["history"]>>["events"][number];

/** The position of the only event of `type` whose details have `fields`; fails unless there is exactly one. */
function onlyEvent(events: HistoryEvent[], type: string, fields: Record<string, unknown> = {}): number {
  const found = events.flatMap((event, index) =>
    event.eventType === type && Object.entries(fields).every(([key, value]) => event.details[key] === value) ? [index] : [],
  );
  const listed = events.map((e) => `${e.eventType} ${JSON.stringify(e.details)}`).join("\n");
  assert.equal(found.length, 1, `one ${type} with ${JSON.stringify(fields)} in\n${listed}`);
  return found[0]!;
}

/** Asserts the history's consumptions: exactly one, of one message on queue `verify`, by `stateExecutionId`. */
function assertOneVerifyConsumed(events: HistoryEvent[], stateExecutionId: string): number {
  const at = onlyEvent(events, "LOCAL_QUEUE_MESSAGES_CONSUMED");
  const { details } = events[at]!;
  assert.equal(details.stateExecutionId, stateExecutionId);
  assert.equal(details.queueName, "verify");
  assert.ok(Array.isArray(details.messages), JSON.stringify(details));
  assert.equal(details.messages.length, 1, JSON.stringify(details));
  assert.equal(typeof (details.messages[0] as { sequenceId?: unknown }).sequenceId, "number", JSON.stringify(details));
  return at;
}

for (const dialect of DIALECTS) {
  describe(`user sign-up on ${dialect}`, () => {
    let env: TestEnv;
    let worker: TestWorker;
    let client: Client;
    /** A client of a second worker whose reminder is an hour away: no timer ends its waits. */
    let patientClient: Client;
    const outbox = new Outbox();
    const gate = new CallGate();

    before(async () => {
      env = await TestEnv.start(dialect, "signup");
      const service = new WorkerService().register(new UserSignupProcess(outbox.send, { seconds: 1 }));
      worker = await env.worker(gate.wrap(service.nodeHandler()));
      client = new Client({ serviceUrl: env.server.url, workerUrl: worker.url });
      const patient = new WorkerService().register(new UserSignupProcess(outbox.send, { hours: 1 }));
      patientClient = new Client({ serviceUrl: env.server.url, workerUrl: (await env.worker(patient.nodeHandler())).url });
    });
    after(async () => {
      gate.release();
      await env?.stop();
    });

    it("reminds on the timer, verifies through the locked RPC and completes", async () => {
      const form = { email: "ann@example.com", name: "Ann" };
      // VerifyState's second waitUntil is held until the RPCs have answered, so the RPC's
      // message is queued before that wait begins and the wait takes it at once.
      gate.hold(waitUntilOf(processId("ann"), "VerifyState-2"));
      const exec = await startUserSignup(client, "ann", form);

      // The start transaction wrote the user's row.
      const started = await env.db.row("user", "user_id", "ann");
      assert.deepEqual(json(started?.form), form);
      assert.equal(started?.status, "waiting");
      assert.equal(started?.source, null);

      // SubmitState emails the link; VerifyState's 1 s timer fires and reminds; the next
      // VerifyState's waitUntil is held.
      await eventually("VerifyState-2's waitUntil held by the gate", 20_000, () => gate.held > 0);
      assert.deepEqual(outbox.kinds("ann@example.com"), ["verification", "reminder"]);
      const states = (await client.states(processId("ann"))).states;
      assert.deepEqual(
        states.map((s) => [s.stateExecutionId, s.status]),
        [["SubmitState-1", "COMPLETED"], ["VerifyState-1", "COMPLETED"], ["VerifyState-2", "WAIT_UNTIL_RUNNING"]],
      );
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
      gate.release();

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
      // The winner's message was queued before VerifyState-2's wait began; the wait's
      // answer took it, and its consumption is recorded as one arriving during a wait is.
      const rpcDone = onlyEvent(whole, "RPC_COMPLETED", { rpcName: "verify", published: 1 });
      const queued = onlyEvent(whole, "LOCAL_QUEUE_MESSAGES_PUBLISHED", { rpcName: "verify", messages: 1 });
      const secondWait = onlyEvent(whole, "WAIT_UNTIL_COMPLETED", { stateExecutionId: "VerifyState-2" });
      const consumed = assertOneVerifyConsumed(whole, "VerifyState-2");
      assert.ok(rpcDone < queued && queued < secondWait && secondWait < consumed, history.join(", "));
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

    it("verifies through the RPC while VerifyState waits, recording the consumption", async () => {
      const exec = await startUserSignup(patientClient, "dee", { email: "dee@example.com" });
      await eventually("VerifyState-1 waiting on its commands", 20_000, async () => {
        const states = (await patientClient.states(processId("dee"))).states;
        return states.some((s) => s.stateExecutionId === "VerifyState-1" && s.status === "WAITING_COMMANDS");
      });
      assert.equal(await verifyByRpc(patientClient, "dee", "email"), "done");
      const done = await patientClient.waitForCompletion<string>(processId("dee"), { timeoutMs: 20_000 });
      assert.equal(done.status, "COMPLETED");
      assert.deepEqual(outbox.kinds("dee@example.com"), ["verification", "welcome"]);

      // The message arrived during the wait: the RPC's transaction handed it to the waiting
      // state, recording the consumption, then the publish that caused it.
      const events = (await patientClient.history(processId("dee"), exec)).events;
      const firstWait = onlyEvent(events, "WAIT_UNTIL_COMPLETED", { stateExecutionId: "VerifyState-1" });
      const rpcDone = onlyEvent(events, "RPC_COMPLETED", { rpcName: "verify", published: 1 });
      const consumed = assertOneVerifyConsumed(events, "VerifyState-1");
      const queued = onlyEvent(events, "LOCAL_QUEUE_MESSAGES_PUBLISHED", { rpcName: "verify", messages: 1, duplicates: 0 });
      const listed = events.map((e) => e.eventType).join(", ");
      assert.ok(firstWait < rpcDone && rpcDone < consumed && consumed < queued, listed);
      assert.ok(!events.some((e) => e.eventType === "TIMER_FIRED"), listed);
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
