import type { StorageSession } from '../contracts/storage.js'
import { uuidv7 } from './ids.js'

/** Why an agent is woken; carried into the run record and the wake variables. */
export type WakeReason =
  | 'assignment'
  | 'mention'
  | 'interaction'
  | 'children_done'
  | 'approval_decided'
  | 'routine'
  | 'manual'
  | 'continuation'

export interface WakeRequest {
  squadId: string
  agentId: string
  issueId: string | null
  reason: WakeReason
  /** SVC_APPROVAL_ID of the wake, when an approval caused it. */
  approvalId?: string | null
  /** SVC_WAKE_COMMENT_ID of the wake, when a comment caused it. */
  commentId?: string | null
  /** The routine run whose issue this wake is for (its env joins the wake environment). */
  routineRunId?: string | null
}

/**
 * Queues a wake in the caller's transaction, so the wake exists exactly when the change that caused
 * it commits. Every cause of a wake (assignment, mention, interaction, children done, approval,
 * routine run, manual wake, continuation) goes through here; the run engine coalesces and runs them.
 * Call `ctx.kickJobs()` after the commit so a node picks it up at once.
 */
export async function queueWake(tx: StorageSession, req: WakeRequest): Promise<void> {
  await tx.wakeups.enqueue({ id: uuidv7(), squadId: req.squadId, agentId: req.agentId, issueId: req.issueId, reason: req.reason })
}
