/**
 * What a state's `waitUntil` asks XDB to wait for (`CommandRequest`), and what it got
 * (`CommandResults`), handed to `execute`.
 *
 * Timer and local-queue commands go over the wire in two lists and their results come
 * back in the same order, so results are indexed per kind: the second timer of a request
 * is `timerFired(1)` whatever queue commands sit between.
 */
import { decode } from "./encoding.js";
import type {
  CommandRequestWire,
  CommandResultsWire,
  CommandWaitingType,
  LocalQueueCommandStatus,
} from "./protocol.js";

/** A delay: seconds, or parts that add up. Timers round up to whole seconds. */
export type Duration =
  | number
  | { days?: number; hours?: number; minutes?: number; seconds?: number; milliseconds?: number };

/** The delay in whole seconds, rounded up: a timer may fire late, never early. */
export function durationSeconds(duration: Duration): number {
  const seconds =
    typeof duration === "number"
      ? duration
      : (duration.days ?? 0) * 86_400 +
        (duration.hours ?? 0) * 3_600 +
        (duration.minutes ?? 0) * 60 +
        (duration.seconds ?? 0) +
        (duration.milliseconds ?? 0) / 1000;
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new RangeError(`a timer needs a finite, non-negative delay, not ${seconds}`);
  }
  return Math.min(Math.ceil(seconds), 2_147_483_647);
}

/** One command of a `CommandRequest`. */
export type Command =
  | { readonly kind: "timer"; readonly delaySeconds: number }
  | { readonly kind: "localQueue"; readonly queueName: string; readonly count: number };

export const Command = {
  /** A durable timer firing after `delay`. */
  timer(delay: Duration): Command {
    return { kind: "timer", delaySeconds: durationSeconds(delay) };
  },
  /** Waits for `count` messages (1 to 1000, default 1) on local queue `queueName`, taken together. */
  localQueue(queueName: string, count = 1): Command {
    if (!Number.isInteger(count) || count < 1 || count > 1000) {
      throw new RangeError(`a local-queue command waits for 1 to 1000 messages, not ${count}`);
    }
    return { kind: "localQueue", queueName, count };
  },
};

/** What XDB waits for before calling `execute`. */
export class CommandRequest {
  private constructor(
    readonly waitingType: CommandWaitingType,
    readonly commands: readonly Command[],
  ) {}

  /** Go on when any one command completes. */
  static anyOf(...commands: Command[]): CommandRequest {
    return new CommandRequest("ANY_OF_COMPLETION", commands);
  }

  /** Go on once every command completed. */
  static allOf(...commands: Command[]): CommandRequest {
    return new CommandRequest("ALL_OF_COMPLETION", commands);
  }

  /** Wait for nothing: `execute` is called at once. */
  static empty(): CommandRequest {
    return new CommandRequest("ALL_OF_COMPLETION", []);
  }

  /** Local queues this request waits on. */
  queueNames(): string[] {
    return this.commands.flatMap((c) => (c.kind === "localQueue" ? [c.queueName] : []));
  }

  toWire(): CommandRequestWire {
    return {
      waitingType: this.waitingType,
      timerCommands: this.commands.flatMap((c) =>
        c.kind === "timer" ? [{ delayInSeconds: c.delaySeconds }] : [],
      ),
      localQueueCommands: this.commands.flatMap((c) =>
        c.kind === "localQueue" ? [{ queueName: c.queueName, count: c.count }] : [],
      ),
    };
  }
}

/** The outcome of a state's commands. */
export class CommandResults {
  constructor(readonly raw: CommandResultsWire = {}) {}

  /** Whether the `index`-th timer command fired. */
  timerFired(index = 0): boolean {
    return this.raw.timerResults?.[index]?.status === "FIRED";
  }

  /** Status of the `index`-th local-queue command, if there is one. */
  localQueueStatus(index = 0): LocalQueueCommandStatus | undefined {
    return this.raw.localQueueResults?.[index]?.status;
  }

  /** Whether the `index`-th local-queue command received its messages. */
  localQueueReceived(index = 0): boolean {
    return this.localQueueStatus(index) === "RECEIVED";
  }

  /** Whether any command on `queueName` received its messages. */
  receivedFromQueue(queueName: string): boolean {
    return (this.raw.localQueueResults ?? []).some(
      (r) => r.queueName === queueName && r.status === "RECEIVED",
    );
  }

  /** Payloads consumed by the `index`-th local-queue command, in FIFO order. */
  localQueueMessages<T = unknown>(index = 0): T[] {
    const result = this.raw.localQueueResults?.[index];
    return (result?.messages ?? []).map((m) =>
      decode<T>(`message of local queue ${JSON.stringify(result?.queueName)}`, m.payload),
    );
  }

  /** Payloads consumed from `queueName` by all commands on it, in FIFO order. */
  messagesFromQueue<T = unknown>(queueName: string): T[] {
    return (this.raw.localQueueResults ?? [])
      .filter((r) => r.queueName === queueName)
      .flatMap((r) => r.messages ?? [])
      .map((m) => decode<T>(`message of local queue ${JSON.stringify(queueName)}`, m.payload));
  }
}
