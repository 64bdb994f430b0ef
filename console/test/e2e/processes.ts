// The processes the browser test runs, built with the TypeScript SDK: a sign-up that
// waits on a timer or a message and writes its business row, a state that fails on
// every attempt with an hour between attempts, so only an operator moves it, and an order
// whose definition the test registers: it reserves, then waits to be shipped (a message,
// or its RPC `expedite`, which publishes one); a tick that completes at once, which the
// schedules test fires; and an export that waits for a message, which the test limits to
// one running execution per customer.
import {
  Command, CommandRequest, CommunicationSchema, PersistenceSchema, StateDecision, StateSchema, rpc,
  type AsyncState, type CommandResults, type Communication, type Persistence, type Process, type WorkerContext,
} from "@xdb/sdk";

import type { ProcessDefinition } from "../../src/types.js";

class VerifyState implements AsyncState {
  waitUntil() {
    return CommandRequest.anyOf(Command.timer({ hours: 1 }), Command.localQueue("verify"));
  }
  execute(_ctx: WorkerContext, _input: void, results: CommandResults, persistence: Persistence) {
    if (!results.receivedFromQueue("verify")) return StateDecision.singleNextState(VerifyState);
    const [message] = results.messagesFromQueue<{ source?: string } | undefined>("verify");
    persistence.setGlobalAttribute("status", "verified");
    persistence.setGlobalAttribute("source", message?.source ?? "queue");
    return StateDecision.gracefulCompleteProcess("verified");
  }
}

export class SignupProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new VerifyState());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("user", "user_id").globalAttributes("form", "status", "source").localAttributes("note");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("verify");
  }
}

class ChargeCardState implements AsyncState {
  readonly options = {
    executeApiRetryPolicy: { initialIntervalSeconds: 3600, maximumIntervalSeconds: 3600, maximumAttempts: 0 },
  };
  execute(ctx: WorkerContext): never {
    throw new Error(`the card provider is down (attempt ${ctx.attempt})`);
  }
}

export class ChargeProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new ChargeCardState());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("user", "user_id").globalAttributes("form", "status");
  }
}

class ReserveState implements AsyncState {
  execute(_ctx: WorkerContext, _input: void, _results: CommandResults, persistence: Persistence) {
    persistence.setGlobalAttribute("status", "waiting");
    return StateDecision.singleNextState(ShipState);
  }
}

class ShipState implements AsyncState {
  waitUntil() {
    return CommandRequest.anyOf(Command.localQueue("shipped"));
  }
  execute(_ctx: WorkerContext, _input: void, _results: CommandResults, persistence: Persistence) {
    persistence.setGlobalAttribute("status", "verified");
    return StateDecision.gracefulCompleteProcess("shipped");
  }
}

export class OrderProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new ReserveState(), new ShipState());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("user", "user_id").globalAttributes("form", "status");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("shipped");
  }
  readonly rpcs = {
    expedite: rpc((_ctx: WorkerContext, input: { by?: string } | undefined, _p: Persistence, communication: Communication) => {
      communication.publishToLocalQueue("shipped", { by: input?.by ?? "rpc" });
      return "expedited";
    }),
  };
}

/** OrderProcess as its deployment registers it (`definitions/register`). */
export const ORDER_DEFINITION: ProcessDefinition = {
  processType: "OrderProcess",
  states: [
    {
      id: "ReserveState",
      hasWaitUntil: false,
      config: {
        skipWaitUntil: true,
        executeApiRetryPolicy: { initialIntervalSeconds: 2, backoffCoefficient: 2, maximumIntervalSeconds: 60, maximumAttempts: 5 },
      },
    },
    { id: "ShipState", hasWaitUntil: true },
  ],
  startStates: ["ReserveState"],
  localQueues: ["shipped"],
  rpcs: [{ name: "expedite", globalAttributeLoading: { columns: ["status"], lockType: "EXCLUSIVE_LOCK" } }],
  globalAttributes: {
    tableName: "user",
    primaryKeyColumn: "user_id",
    columns: [
      { name: "form", type: "JSON" },
      { name: "status", type: "STRING" },
    ],
  },
};

class TickState implements AsyncState {
  execute() {
    return StateDecision.gracefulCompleteProcess("ticked");
  }
}

/** Completes as soon as it starts: what a schedule fires. */
export class TickProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new TickState());
  }
}

/** TickProcess as its deployment registers it: its state skips waitUntil. */
export const TICK_DEFINITION: ProcessDefinition = {
  processType: "TickProcess",
  states: [{ id: "TickState", hasWaitUntil: false, config: { skipWaitUntil: true } }],
  startStates: ["TickState"],
};

class ExportState implements AsyncState {
  waitUntil() {
    return CommandRequest.allOf(Command.localQueue("exported"));
  }
  execute() {
    return StateDecision.gracefulCompleteProcess("exported");
  }
}

/** Waits for the message `exported`: running until told, so it holds its slot. */
export class ExportProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new ExportState());
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("exported");
  }
}
