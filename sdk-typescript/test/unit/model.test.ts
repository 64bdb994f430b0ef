// The process model: schemas, commands, results, decisions, persistence, communication,
// and the definition that turns them into wire form. Pure, no IO.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  Command, CommandRequest, CommandResults, Communication, CommunicationSchema, NextState, Persistence, PersistenceSchema,
  ProcessDefinition, StateDecision, StateSchema, XdbSdkError, buildStartRequest, durationSeconds, encode, rpc,
  type AsyncState, type Process,
} from "@xdb/sdk";

import { UserSignupProcess } from "../../samples/user-signup.js";

const sdkError = (kind: string) => (e: unknown) => e instanceof XdbSdkError && e.kind === kind;

class First implements AsyncState<{ n: number }> {
  readonly options = { executeApiTimeoutSeconds: 5 };
  execute(_ctx: unknown, input: { n: number }) {
    return input.n > 0 ? StateDecision.singleNextState(Second) : StateDecision.deadEnd();
  }
}
class Second implements AsyncState {
  static readonly stateId = "second-state";
  readonly options = {
    globalAttributeLoading: { columns: ["status"], lockType: "SHARED_LOCK" as const },
    stateFailureRecoveryOptions: { policy: "PROCEED_TO_CONFIGURED_STATE" as const, stateFailureProceedStateId: "First" },
  };
  waitUntil() {
    return CommandRequest.empty();
  }
  execute() {
    return StateDecision.gracefulCompleteProcess("ok");
  }
}
class Sample implements Process {
  readonly processType = "sample";
  stateSchema() {
    return StateSchema.withStartingState(new First(), new Second());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("app.orders", "order_id").globalAttributes("status", "total").localAttributes("note");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("q");
  }
  readonly rpcs = {
    plain: rpc(() => 1),
    locked: rpc(() => 2, { lockType: "EXCLUSIVE_LOCK", timeoutSeconds: 3 }),
    narrow: rpc(() => 3, { globalAttributeLoading: { columns: ["total"] } }),
  };
}

describe("commands and results", () => {
  it("rounds timers up to whole seconds and splits the wire lists", () => {
    assert.equal(durationSeconds(1.5), 2);
    assert.equal(durationSeconds({ hours: 24 }), 86_400);
    assert.equal(durationSeconds({ minutes: 1, milliseconds: 1 }), 61);
    assert.throws(() => durationSeconds(-1), RangeError);
    assert.throws(() => Command.localQueue("q", 0), RangeError);
    assert.throws(() => Command.localQueue("q", 1001), RangeError);
    const request = CommandRequest.anyOf(Command.timer(1.5), Command.localQueue("verify"), Command.timer(60), Command.localQueue("b", 3));
    assert.deepEqual(request.toWire(), {
      waitingType: "ANY_OF_COMPLETION",
      timerCommands: [{ delayInSeconds: 2 }, { delayInSeconds: 60 }],
      localQueueCommands: [{ queueName: "verify", count: 1 }, { queueName: "b", count: 3 }],
    });
    assert.deepEqual(request.queueNames(), ["verify", "b"]);
    assert.equal(CommandRequest.allOf().toWire().waitingType, "ALL_OF_COMPLETION");
  });

  it("reads timer status and typed queue messages", () => {
    const results = new CommandResults({
      timerResults: [{ status: "SKIPPED" }],
      localQueueResults: [
        { queueName: "verify", status: "RECEIVED", messages: [{ queueName: "verify", payload: encode("m", "email") }, { queueName: "verify" }] },
      ],
    });
    assert.equal(results.timerFired(0), false);
    assert.equal(results.timerFired(5), false);
    assert.equal(results.localQueueReceived(0), true);
    assert.equal(results.localQueueStatus(1), undefined);
    assert.equal(results.receivedFromQueue("verify"), true);
    assert.equal(results.receivedFromQueue("other"), false);
    assert.deepEqual(results.localQueueMessages<string>(0), ["email", undefined]);
    assert.deepEqual(results.messagesFromQueue("verify"), ["email", undefined]);
    assert.deepEqual(new CommandResults().messagesFromQueue("x"), []);
  });
});

describe("persistence and communication", () => {
  const schema = PersistenceSchema.withTable("user", "user_id").globalAttributes("status", "form").localAttributes("attempts");

  it("reads loaded values, sees its own writes, and sends one write per name", () => {
    const p = new Persistence("P", schema, {
      globalAttributes: [{ column: "status", value: "waiting" }, { column: "form", value: null }],
      localAttributes: [{ key: "attempts", value: encode("a", 2) }],
    });
    assert.equal(p.getGlobalAttribute("status"), "waiting");
    assert.equal(p.getGlobalAttribute("form"), undefined, "SQL NULL");
    assert.equal(p.getGlobalAttribute("missing"), undefined);
    assert.equal(p.getLocalAttribute<number>("attempts"), 2);
    p.setGlobalAttribute("status", "verified");
    p.setGlobalAttribute("form", { email: "a@b.c" });
    p.setGlobalAttribute("status", "again");
    p.setLocalAttribute("attempts", 3);
    assert.equal(p.getGlobalAttribute("status"), "again");
    assert.equal(p.getLocalAttribute("attempts"), 3);
    assert.deepEqual(p.writes(), {
      globalAttributes: [{ column: "status", value: "again" }, { column: "form", value: { email: "a@b.c" } }],
      localAttributes: [{ key: "attempts", value: { encoding: "json", data: "3" } }],
    });
  });

  it("checks reads with a schema and refuses undeclared names", () => {
    const p = new Persistence("P", schema, { globalAttributes: [{ column: "status", value: 7 }] });
    const isString = { parse: (v: unknown) => { if (typeof v !== "string") throw new Error("not a string"); return v; } };
    assert.throws(() => p.getGlobalAttribute("status", isString), sdkError("DECODE"));
    assert.throws(() => p.setGlobalAttribute("stauts", "x"), sdkError("UNDECLARED"));
    assert.throws(() => p.setLocalAttribute("nope", 1), sdkError("UNDECLARED"));
    assert.throws(() => new Persistence("P", PersistenceSchema.none().globalAttributes("a")).setGlobalAttribute("a", 1), sdkError("UNDECLARED"));
    assert.deepEqual(p.writes(), { globalAttributes: [], localAttributes: [] });
  });

  it("publishes to declared queues only, and starts states from RPCs only", () => {
    const c = new Communication("P", CommunicationSchema.localQueues("q"), false);
    c.publishToLocalQueue("q");
    c.publishToLocalQueue("q", { a: 1 }, { dedupId: "d1" });
    assert.deepEqual(c.published(), [
      { queueName: "q" },
      { queueName: "q", payload: { encoding: "json", data: '{"a":1}' }, dedupId: "d1" },
    ]);
    assert.throws(() => c.publishToLocalQueue("other"), sdkError("UNDECLARED"));
    assert.throws(() => c.triggerStateMovement(Second), sdkError("NOT_ALLOWED"));
    const inRpc = new Communication("P", CommunicationSchema.none(), true);
    inRpc.triggerStateMovement(First, { n: 1 });
    assert.deepEqual(inRpc.stateMovements().map((m) => [m.stateId, m.input]), [["First", { encoding: "json", data: '{"n":1}' }]]);
  });
});

describe("process definition", () => {
  const def = new ProcessDefinition(new Sample());

  it("names states by class (or static stateId) and the process by processType or class", () => {
    assert.equal(def.processType, "sample");
    assert.deepEqual(def.stateIds(), ["First", "second-state"]);
    assert.equal(def.startingStateId, "First");
    assert.equal(new ProcessDefinition(new UserSignupProcess()).processType, "UserSignupProcess");
  });

  it("configures states: waitUntil flag, options, default loading, recovery target", () => {
    assert.deepEqual(def.stateConfig("First"), {
      executeApiTimeoutSeconds: 5,
      skipWaitUntil: true,
      globalAttributeLoading: { columns: ["status", "total"], lockType: "NO_LOCK" },
      localAttributeLoading: { keys: ["note"], lockType: "NO_LOCK" },
    });
    const second = def.stateConfig("second-state");
    assert.equal(second.skipWaitUntil, false);
    assert.deepEqual(second.globalAttributeLoading, { columns: ["status"], lockType: "SHARED_LOCK" });
    assert.equal(second.stateFailureRecoveryOptions?.stateFailureProceedStateConfig?.skipWaitUntil, true);
    assert.throws(() => def.stateConfig("nope"), sdkError("UNKNOWN_STATE"));
  });

  it("turns decisions into wire decisions", () => {
    assert.deepEqual(def.stateDecision(StateDecision.gracefulCompleteProcess({ ok: true })), {
      nextStates: [],
      threadCloseDecision: { closeType: "GRACEFUL_COMPLETE_PROCESS", output: { encoding: "json", data: '{"ok":true}' } },
    });
    assert.deepEqual(def.stateDecision(StateDecision.deadEnd()), { nextStates: [], threadCloseDecision: { closeType: "DEAD_END" } });
    const parallel = def.stateDecision(StateDecision.multipleNextStates(NextState.of(First, { n: 1 }), NextState.of("second-state")));
    assert.deepEqual(parallel.nextStates?.map((m) => [m.stateId, m.stateInput?.data, m.stateConfig?.skipWaitUntil]), [
      ["First", '{"n":1}', true],
      ["second-state", undefined, false],
    ]);
    assert.equal(StateDecision.forceFailProcess("why").closeType, "FORCE_FAIL_PROCESS");
    assert.equal(StateDecision.forceCompleteProcess().closeType, "FORCE_COMPLETE_PROCESS");
    assert.throws(() => def.stateDecision(StateDecision.singleNextState("ghost")), sdkError("UNKNOWN_STATE"));
  });

  it("gives RPCs their loading policy and lock", () => {
    const all = { columns: ["status", "total"], lockType: "NO_LOCK" };
    const local = { keys: ["note"], lockType: "NO_LOCK" };
    assert.deepEqual(def.rpcRequestOptions("plain"), { globalAttributeLoading: all, localAttributeLoading: local });
    assert.deepEqual(def.rpcRequestOptions("locked"), {
      timeoutSeconds: 3,
      globalAttributeLoading: { ...all, lockType: "EXCLUSIVE_LOCK" },
      localAttributeLoading: local,
    });
    assert.deepEqual(def.rpcRequestOptions("narrow").globalAttributeLoading, { columns: ["total"], lockType: "NO_LOCK" });
    assert.throws(() => def.rpcRequestOptions("nope"), sdkError("NOT_ALLOWED"));
  });

  it("refuses inconsistent definitions", () => {
    class Twice implements Process {
      stateSchema() {
        return StateSchema.withStartingState(new First(), new First());
      }
    }
    assert.throws(() => new ProcessDefinition(new Twice()), /registered twice/);
    class Literal implements Process {
      stateSchema() {
        return StateSchema.noStartingState({ execute: () => StateDecision.deadEnd() });
      }
    }
    assert.throws(() => new ProcessDefinition(new Literal()), /class instances/);
  });
});

describe("start requests", () => {
  const signup = new ProcessDefinition(new UserSignupProcess());

  it("builds the design's start: table row, initial writes, starting state with its config", () => {
    const request = buildStartRequest(signup, "user-signup-u1", undefined, {
      workerUrl: "http://w:1",
      globalAttributePkValue: "u1",
      initialGlobalAttributes: { form: { email: "a@b.c" }, status: "waiting" },
      idReusePolicy: "ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY",
      timeoutSeconds: 1.2,
    });
    assert.deepEqual(request, {
      processId: "user-signup-u1",
      processType: "UserSignupProcess",
      workerUrl: "http://w:1",
      startStateId: "SubmitState",
      startStateConfig: {
        skipWaitUntil: true,
        globalAttributeLoading: { columns: ["form", "status", "source"], lockType: "NO_LOCK" },
      },
      processStartConfig: {
        globalAttributeConfig: {
          tableName: "user",
          primaryKey: { column: "user_id", value: "u1" },
          initialWrite: [
            { column: "form", value: { email: "a@b.c" } },
            { column: "status", value: "waiting" },
          ],
        },
        idReusePolicy: "ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY",
        timeoutSeconds: 2,
      },
    });
  });

  it("carries a concurrency key only when given", () => {
    const base = { workerUrl: "http://w:1", globalAttributePkValue: "u1" };
    const keyed = buildStartRequest(signup, "p", undefined, { ...base, concurrencyKey: "customer-42" });
    assert.equal(keyed.processStartConfig?.concurrencyKey, "customer-42");
    // An empty key is a key the service refuses (1 to 255 characters), not "none": sent.
    assert.equal(buildStartRequest(signup, "p", undefined, { ...base, concurrencyKey: "" }).processStartConfig?.concurrencyKey, "");
    assert.equal("concurrencyKey" in (buildStartRequest(signup, "p", undefined, base).processStartConfig ?? {}), false);
  });

  it("carries a priority only when given, its range left to the service", () => {
    const base = { workerUrl: "http://w:1", globalAttributePkValue: "u1" };
    assert.equal(buildStartRequest(signup, "p", undefined, { ...base, priority: 1 }).processStartConfig?.priority, 1);
    assert.equal(buildStartRequest(signup, "p", undefined, { ...base, priority: 9 }).processStartConfig?.priority, 9);
    assert.equal("priority" in (buildStartRequest(signup, "p", undefined, base).processStartConfig ?? {}), false);
  });

  it("carries a fairness key and weight only when given, their checks left to the service", () => {
    const base = { workerUrl: "http://w:1", globalAttributePkValue: "u1" };
    const configOf = (more: { fairnessKey?: string; fairnessWeight?: number }) =>
      buildStartRequest(signup, "p", undefined, { ...base, ...more }).processStartConfig ?? {};
    const fairnessOf = (more: { fairnessKey?: string; fairnessWeight?: number }) => {
      const config = configOf(more);
      return [config.fairnessKey, config.fairnessWeight];
    };
    assert.deepEqual(fairnessOf({ fairnessKey: "tenant-7", fairnessWeight: 5 }), ["tenant-7", 5]);
    assert.equal("fairnessWeight" in configOf({ fairnessKey: "tenant-7" }), false);
    // The service checks the key (1 to 255 characters), the weight (1 to 1,000) and that a
    // weight has a key, naming the field: all sent as given.
    assert.deepEqual(fairnessOf({ fairnessKey: "" }), ["", undefined]);
    assert.deepEqual(fairnessOf({ fairnessKey: "t", fairnessWeight: 0 }), ["t", 0]);
    assert.deepEqual(fairnessOf({ fairnessWeight: 1001 }), [undefined, 1001]);
    assert.equal("fairnessKey" in configOf({ fairnessWeight: 1001 }), false);
    for (const field of ["fairnessKey", "fairnessWeight"]) assert.equal(field in configOf({}), false);
  });

  it("catches mistakes before the service does", () => {
    const base = { workerUrl: "http://w:1", globalAttributePkValue: "u1" };
    assert.throws(() => buildStartRequest(signup, "p", undefined, { ...base, initialGlobalAttributes: { stauts: 1 } }), sdkError("UNDECLARED"));
    assert.throws(() => buildStartRequest(signup, "p", undefined, { workerUrl: "http://w:1" }), /globalAttributePkValue is required/);
    // No worker URL: left to the service, which routes the start to the registered deployment.
    assert.equal(buildStartRequest(signup, "p", undefined, { globalAttributePkValue: "u1" }).workerUrl, undefined);
    assert.throws(() => buildStartRequest(signup, "p", undefined, { ...base, initialLocalAttributes: { x: 1 } }), sdkError("UNDECLARED"));
    assert.throws(() => new ProcessDefinition({ stateSchema: () => StateSchema.noStartingState() }), /needs a processType/);
    const noStart = new ProcessDefinition({ processType: "no-start", stateSchema: () => StateSchema.noStartingState(new First()) });
    assert.throws(() => buildStartRequest(noStart, "p", { n: 1 }, { workerUrl: "http://w:1" }), /no starting state/);
    assert.deepEqual(buildStartRequest(noStart, "p", undefined, { workerUrl: "http://w:1" }), {
      processId: "p",
      processType: "no-start",
      workerUrl: "http://w:1",
      processStartConfig: {},
    });
  });
});
