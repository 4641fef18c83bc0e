import type { NewOutboxEntry } from '../../records/activity.js'
import type { CostEvent } from '../../contracts/governance.js'
import type { Project } from '../../records.js'

/**
 * Outbox rows of governance and money in the ingest wire shape (docs/ingest-protocol.md): project
 * upserts and cost-event facts. Never a description or anything else the tower must not see.
 *
 * The one mapping of these records to the wire: the tower client's full resync reuses these
 * builders. Rules for every builder of a wire payload (run_event facts included): a nullable field
 * is written with its key and `null` when empty, never left out (the reference tower refuses a batch
 * whose nullable keys are missing); a run_event carries `startedAt`/`finishedAt` as null until known
 * and reports a local `timed_out` run as `failed`.
 */

export function projectUpsert(p: Project, deleted = false): NewOutboxEntry {
  return {
    kind: 'upsert',
    entityType: 'project',
    entityId: p.id,
    squadId: p.squadId,
    payload: {
      type: 'project',
      localId: p.id,
      squadLocalId: p.squadId,
      name: p.name,
      // A paused project reports `paused` so the fleet view shows why nothing moves there.
      status: deleted ? 'deleted' : p.pauseReason ? 'paused' : p.status,
      updatedAt: (deleted ? new Date() : p.updatedAt).toISOString(),
    },
  }
}

export function costEventFact(e: CostEvent): NewOutboxEntry {
  return {
    kind: 'fact',
    entityType: 'cost_event',
    entityId: e.id,
    squadId: e.squadId,
    payload: {
      type: 'cost_event',
      localId: e.id,
      squadLocalId: e.squadId,
      // Nullable keys are always present, null when empty (docs/ingest-protocol.md: nullable keys).
      agentLocalId: e.agentId ?? null,
      issueLocalId: e.issueId ?? null,
      projectLocalId: e.projectId ?? null,
      provider: e.provider,
      biller: e.biller ?? null,
      // The tower's fact knows three billing types; an unknown one goes as metered (cents 0 when unpriced).
      billingType: e.billingType === 'unknown' ? 'metered_api' : e.billingType,
      model: e.model,
      inputTokens: e.inputTokens,
      cachedInputTokens: e.cachedInputTokens,
      outputTokens: e.outputTokens,
      costCents: e.costCents,
      occurredAt: e.occurredAt.toISOString(),
    },
  }
}
