import type { NewActivity, StorageSession } from '../../contracts/storage.js'
import type { NewOutboxEntry } from '../../records/activity.js'
import type { ActivityEntry, Agent, Issue, Squad } from '../../records.js'
import { actorColumns, type Actor } from '../foundation/actor.js'
import { uuidv7 } from '../foundation/ids.js'
import { redact } from '../foundation/redact.js'

/**
 * Writes the audit trail and the tower outbox inside the caller's transaction, so a change, its
 * activity entry and its outbox row commit or roll back together.
 */
export interface ActivityInput {
  squadId: string
  action: string
  entityType: string
  entityId: string
  details?: Record<string, unknown> | null
  /** Overrides the actor's own agent column (e.g. the agent an Operator acted on). */
  agentId?: string | null
  /** Overrides the actor's run column (the run engine writing about a run). */
  runId?: string | null
  /** More outbox rows for the same change, written in the same statement as the entry's own (one round trip). */
  outbox?: NewOutboxEntry[]
}

/** Local activity actions reported to the tower, mapped onto the ingest whitelist. */
const towerActions: Record<string, string> = {
  'agent.created': 'agent.created',
  'agent.deleted': 'agent.deleted',
  'squad.created': 'squad.created',
  'cost.recorded': 'cost.reported',
  'budget.soft_threshold_crossed': 'budget_soft_threshold_crossed',
  'budget.hard_threshold_crossed': 'budget_hard_threshold_crossed',
  'squad.budget_updated': 'squad.budget_updated',
  'agent.budget_updated': 'agent.budget_updated',
}

export async function recordActivity(tx: StorageSession, actor: Actor, input: ActivityInput): Promise<void> {
  const { entry, outbox } = activityRows(actor, input, new Date())
  await tx.activity.record([entry], outbox)
}

/** Several entries (of a batch of changes) and all their outbox rows in one statement. */
export async function recordActivities(tx: StorageSession, entries: Array<{ actor: Actor; input: ActivityInput }>): Promise<void> {
  const at = new Date()
  const rows = entries.map((e) => activityRows(e.actor, e.input, at))
  await tx.activity.record(
    rows.map((r) => r.entry),
    rows.flatMap((r) => r.outbox),
  )
}

/**
 * The activity row and every outbox row of an entry, built without writing them: for a storage
 * primitive that writes them together with other rows in one statement (`costs.record`).
 */
export function activityRows(actor: Actor, input: ActivityInput, at: Date): { entry: ActivityEntry; outbox: NewOutboxEntry[] } {
  const entry: ActivityEntry = { ...newEntry(actor, input, at), createdAt: at }
  return { entry, outbox: outboxFor(entry, input) }
}

function newEntry(actor: Actor, input: ActivityInput, at?: Date): NewActivity {
  const cols = actorColumns(actor)
  return {
    id: uuidv7(at?.getTime()),
    squadId: input.squadId,
    actorType: cols.actorType,
    actorId: cols.actorId,
    action: input.action,
    entityType: input.entityType,
    entityId: input.entityId,
    agentId: input.agentId !== undefined ? input.agentId : cols.agentId,
    runId: input.runId !== undefined ? input.runId : cols.runId,
    details: input.details ? redact(input.details) : null,
  }
}

function outboxFor(entry: ActivityEntry, input: ActivityInput): NewOutboxEntry[] {
  const rows: NewOutboxEntry[] = [...(input.outbox ?? [])]
  const towerAction = towerActions[input.action]
  if (towerAction) {
    rows.push({
      kind: 'fact',
      entityType: 'activity_event',
      entityId: entry.id,
      squadId: input.squadId,
      payload: {
        type: 'activity_event',
        localId: entry.id,
        squadLocalId: input.squadId ?? null,
        action: towerAction,
        entityRef: `${input.entityType}:${input.entityId}`,
        details: flatScalars(entry.details),
        occurredAt: entry.createdAt.toISOString(),
      },
    })
  }
  return rows
}

/** The tower accepts only a flat object of strings, numbers and booleans in activity details. */
function flatScalars(details: Record<string, unknown> | null): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  if (!details) return out
  for (const [k, v] of Object.entries(details)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v
  }
  return out
}

/** Upsert snapshots in the ingest wire shape (docs/ingest-protocol.md). Never bodies, prompts or config. */
export const outboxUpserts = {
  squad: (s: Squad, spentMonthlyCents = 0, deleted = false) => ({
    kind: 'upsert' as const,
    entityType: 'squad',
    entityId: s.id,
    squadId: s.id,
    payload: {
      type: 'squad',
      localId: s.id,
      name: s.name,
      status: deleted ? 'deleted' : s.status,
      budgetMonthlyCents: s.budgetMonthlyCents,
      spentMonthlyCents,
      updatedAt: (deleted ? new Date() : s.updatedAt).toISOString(),
    },
  }),
  agent: (a: Agent, spentMonthlyCents = 0, deleted = false) => ({
    kind: 'upsert' as const,
    entityType: 'agent',
    entityId: a.id,
    squadId: a.squadId,
    payload: {
      type: 'agent',
      localId: a.id,
      squadLocalId: a.squadId,
      name: a.name,
      role: a.role,
      status: deleted ? 'deleted' : a.status,
      adapterType: a.adapterType,
      budgetMonthlyCents: a.budgetMonthlyCents,
      spentMonthlyCents,
      // Nullable keys are always present, null when empty (docs/ingest-protocol.md: nullable keys).
      title: a.title || null,
      reportsToLocalId: a.reportsToAgentId ?? null,
      updatedAt: (deleted ? new Date() : a.updatedAt).toISOString(),
    },
  }),
  issue: (i: Issue, deleted = false) => ({
    kind: 'upsert' as const,
    entityType: 'issue',
    entityId: i.id,
    squadId: i.squadId,
    payload: {
      type: 'issue',
      localId: i.id,
      squadLocalId: i.squadId,
      projectLocalId: i.projectId,
      // The tower client swaps the title for the identifier when reportIssueTitles is false.
      title: i.title,
      identifier: i.identifier,
      status: deleted ? 'deleted' : i.status,
      assigneeAgentLocalId: i.assigneeAgentId,
      updatedAt: (deleted ? new Date() : i.updatedAt).toISOString(),
    },
  }),
}
