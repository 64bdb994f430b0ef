/**
 * Local-queue publishing, and in RPCs starting states, for one call of user code. Like
 * attribute writes, these go back in the response and take effect in the transaction
 * that records the call.
 */
import { NextState } from "./decision.js";
import { encodeOptional } from "./encoding.js";
import { XdbSdkError } from "./errors.js";
import type { LocalQueueMessage } from "./protocol.js";
import type { CommunicationSchema } from "./schema.js";
import type { InputArgs, StateRef } from "./state.js";

export class Communication {
  private readonly messages: LocalQueueMessage[] = [];
  private readonly movements: NextState[] = [];

  constructor(
    private readonly processType: string,
    private readonly schema: CommunicationSchema,
    private readonly inRpc: boolean,
  ) {}

  /**
   * Publishes `payload` (none by default) to local queue `queueName` of this execution.
   * XDB drops a second message with the same `dedupId` on the same queue.
   */
  publishToLocalQueue(queueName: string, payload?: unknown, options: { dedupId?: string } = {}): void {
    this.checkQueue(queueName);
    const message: LocalQueueMessage = { queueName };
    const encoded = encodeOptional(`message to local queue ${JSON.stringify(queueName)}`, payload);
    if (encoded) message.payload = encoded;
    if (options.dedupId !== undefined) message.dedupId = options.dedupId;
    this.messages.push(message);
  }

  /** Starts `state` as a new thread of the execution. RPCs only: states move on by deciding. */
  triggerStateMovement<I>(state: StateRef<I>, ...input: InputArgs<I>): void {
    if (!this.inRpc) {
      throw new XdbSdkError(
        "NOT_ALLOWED",
        "triggerStateMovement is only allowed in RPCs; states move on through their decision",
      );
    }
    this.movements.push(NextState.of(state, ...input));
  }

  /** Throws unless `queueName` is declared. */
  checkQueue(queueName: string): void {
    if (!this.schema.declaresLocalQueue(queueName)) {
      throw new XdbSdkError(
        "UNDECLARED",
        `local queue ${JSON.stringify(queueName)} is not declared in the schema of process ${this.processType}`,
      );
    }
  }

  /** Messages published so far. */
  published(): readonly LocalQueueMessage[] {
    return this.messages;
  }

  /** States started so far (RPCs). */
  stateMovements(): readonly NextState[] {
    return this.movements;
  }
}
