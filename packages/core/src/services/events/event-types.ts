import type { FeedEvent } from '../../contracts/storage.js'

/** The live event types, in docs/events.md order. */
export const squadEventTypes = [
  'issue.created',
  'issue.updated',
  'issue.commented',
  'issue.checked_out',
  'issue.released',
  'approval.created',
  'approval.decided',
  'run.queued',
  'run.started',
  'run.output',
  'run.finished',
  'cost.recorded',
  'agent.updated',
  'budget.warning',
  'budget.exceeded',
  'routine.fired',
  'squad.created',
  'squad.updated',
] as const
export type SquadEventType = (typeof squadEventTypes)[number]

/**
 * Activity actions and the event each one is streamed as. An action not listed here (key
 * creation, secret changes, squad settings …) stays in the activity log and is not streamed.
 */
export const eventTypeOfAction: Readonly<Record<string, SquadEventType>> = {
  'issue.created': 'issue.created',
  'issue.updated': 'issue.updated',
  'issue.status_changed': 'issue.updated',
  'issue.deleted': 'issue.updated',
  'issue.document_created': 'issue.updated',
  'issue.document_updated': 'issue.updated',
  'issue.document_deleted': 'issue.updated',
  'issue.interaction_created': 'issue.updated',
  'issue.comment_added': 'issue.commented',
  'issue.checked_out': 'issue.checked_out',
  'issue.released': 'issue.released',
  'approval.created': 'approval.created',
  'approval.resubmitted': 'approval.created',
  'approval.approved': 'approval.decided',
  'approval.rejected': 'approval.decided',
  'approval.revision_requested': 'approval.decided',
  'run.queued': 'run.queued',
  'run.started': 'run.started',
  'run.output': 'run.output',
  'run.succeeded': 'run.finished',
  'run.failed': 'run.finished',
  'run.cancelled': 'run.finished',
  'run.timed_out': 'run.finished',
  'cost.recorded': 'cost.recorded',
  'agent.created': 'agent.updated',
  'agent.updated': 'agent.updated',
  'agent.paused': 'agent.updated',
  'agent.resumed': 'agent.updated',
  'agent.terminated': 'agent.updated',
  'agent.deleted': 'agent.updated',
  'agent.budget_updated': 'agent.updated',
  'agent.permissions_updated': 'agent.updated',
  'agent.instructions_path_updated': 'agent.updated',
  'agent.session_reset': 'agent.updated',
  'budget.soft_threshold_crossed': 'budget.warning',
  'budget.hard_threshold_crossed': 'budget.exceeded',
  'routine.fired': 'routine.fired',
  'squad.created': 'squad.created',
  'squad.updated': 'squad.updated',
  'squad.archived': 'squad.updated',
}

/**
 * Events every Operator stream gets, whichever squad it follows: a squad made or renamed elsewhere
 * changes what an Operator can switch to (an agent key sees its own squad only).
 */
export const isInstanceWide = (type: SquadEventType): boolean => type === 'squad.created' || type === 'squad.updated'

/** One event as a subscriber receives it (the `data:` of an SSE message). */
export interface SquadEventMessage {
  id: string
  type: SquadEventType
  squadId: string
  at: string
  /** The activity action behind it (`issue.status_changed` is an `issue.updated`). */
  action: string
  entityType: string
  entityId: string
  actorType: string
  actorId: string
  agentId: string | null
  runId: string | null
  /** The issue it concerns, when it concerns one (an issue event, or a run, comment or cost of one). */
  issueId: string | null
  /** What changed: the activity entry's details (a delta), or the output chunk of `run.output`. */
  data: Record<string, unknown>
}

export function toMessage(e: FeedEvent): SquadEventMessage | undefined {
  const type = eventTypeOfAction[e.action]
  if (!type) return undefined
  const details = e.details ?? {}
  const issueId = e.entityType === 'issue' ? e.entityId : typeof details.issueId === 'string' ? details.issueId : null
  // A run.output event's data is its chunk (the issue is on the envelope).
  const data = type === 'run.output' ? { stream: details.stream, text: details.text, offset: details.offset } : details
  return {
    id: e.cursor,
    type,
    squadId: e.squadId,
    at: e.createdAt.toISOString(),
    action: e.action,
    entityType: e.entityType,
    entityId: e.entityId,
    actorType: e.actorType,
    actorId: e.actorId,
    agentId: e.agentId,
    runId: e.runId,
    issueId,
    data,
  }
}

/** A `types=` filter: exact types and `area.*` prefixes; undefined matches everything. */
export function typeMatcher(patterns: string[] | undefined): (type: SquadEventType) => boolean {
  if (!patterns?.length) return () => true
  const exact = new Set(patterns.filter((p) => !p.endsWith('.*')))
  const prefixes = patterns.filter((p) => p.endsWith('.*')).map((p) => p.slice(0, -1))
  return (type) => exact.has(type) || prefixes.some((p) => type.startsWith(p))
}
