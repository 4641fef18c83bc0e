import type { StorageSession } from '../../contracts/storage.js'
import type { HeartbeatRun } from '../../records.js'
import { uuidv7 } from '../foundation/ids.js'
import { systemActor } from '../foundation/actor.js'
import { recordActivity } from '../audit/activity-recorder.js'
import { runEventFact } from './run-facts.js'

/** Why an agent is woken; carried into the run record and the wake variables. */
export type WakeReason = 'assignment' | 'mention' | 'interaction' | 'children_done' | 'approval_decided' | 'routine' | 'manual' | 'continuation'

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
  /** For a liveness continuation: how many continuations in a row this one is (1, 2, …). */
  continuationDepth?: number
  /** For a retry after a transient upstream failure: which retry this is (1, 2, …). */
  retryAttempt?: number
  /** Not before this time (a retry waiting for a rate limit's reset); default now. */
  runAt?: Date
}

/** What queueWake did: the queued run, and whether it is new or absorbed this wake. */
export interface QueuedWake {
  run: HeartbeatRun
  /** false when a run was already queued for this agent and issue and took this wake over. */
  created: boolean
}

/** The job kind that carries a queued run to a node. */
export const heartbeatRunJob = 'heartbeat_run'

/**
 * Queues a wake in the caller's transaction, so the wake exists exactly when the change that caused
 * it commits. Every cause of a wake (assignment, mention, interaction, children done, approval,
 * routine run, manual wake, continuation) goes through here; the run engine coalesces and runs them.
 *
 * Coalescing: at most one `queued` run per agent and issue. A wake that finds one folds into it
 * (the run keeps its reason; the newest comment and approval ids win), so a burst of a thousand
 * comments leaves one queued run. A run already `running` does not absorb wakes: the agent is woken
 * once more after it, to see what arrived meanwhile.
 *
 * Call `ctx.kickJobs()` after the commit so a node picks it up at once.
 */
export async function queueWake(tx: StorageSession, req: WakeRequest): Promise<QueuedWake> {
  const id = uuidv7()
  const queued = await tx.heartbeatRuns.queue({
    id,
    squadId: req.squadId,
    agentId: req.agentId,
    issueId: req.issueId,
    reason: req.reason,
    approvalId: req.approvalId ?? null,
    commentId: req.commentId ?? null,
    routineRunId: req.routineRunId ?? null,
    continuationDepth: req.continuationDepth ?? 0,
    ...(req.retryAttempt ? { retryAttempt: req.retryAttempt } : {}),
  })
  if (queued.created) {
    // For /metrics (slaw_wakes_queued_total), once this transaction has committed.
    tx.note?.({ kind: 'wake_queued', reason: req.reason })
    // The job and the entry do not depend on each other: sent together, one round trip.
    await Promise.all([
      // Many attempts: a reclaimed run job only ends its run (node_lost), it never runs it twice.
      tx.jobs.enqueue({ id: uuidv7(), kind: heartbeatRunJob, squadId: req.squadId, payload: { runId: id }, dedupeKey: id, maxAttempts: 10, ...(req.runAt ? { runAt: req.runAt } : {}) }),
      // The run_event fact for the tower, and a `run.queued` entry (a live event) in one statement.
      recordActivity(tx, systemActor('run-engine'), {
        squadId: req.squadId,
        action: 'run.queued',
        entityType: 'heartbeat_run',
        entityId: id,
        agentId: req.agentId,
        runId: id,
        details: { reason: req.reason, ...(req.issueId ? { issueId: req.issueId } : {}) },
        outbox: [runEventFact(queued.run, queued.run.createdAt)],
      }),
    ])
  }
  return queued
}
