import { Type } from '@sinclair/typebox'
import { squadEventTypes } from '../services/events/event-types.js'
import { Nullable, Timestamp } from './common.js'

const eventPattern = `(${squadEventTypes.map((t) => t.replace('.', '\\.')).join('|')}|(issue|approval|run|cost|agent|budget|routine|squad)\\.\\*)`
export const EventsQuery = Type.Object({
  types: Type.Optional(Type.String({ pattern: `^${eventPattern}(,${eventPattern})*$`, maxLength: 500, description: 'Comma-separated event types or `area.*`, e.g. `issue.*,run.finished`.' })),
  issueId: Type.Optional(Type.String({ maxLength: 200, description: 'Only events of this issue (its own, and runs, comments and costs of it).' })),
  agentId: Type.Optional(Type.String({ maxLength: 200, description: 'Only events of this agent.' })),
  lastEventId: Type.Optional(Type.String({ maxLength: 200, description: 'Resume after this event, for clients that cannot send the Last-Event-ID header.' })),
})
export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ maxLength: 200, description: 'Resume after this event (sent by EventSource on reconnect).' })),
})

const RunOutputData = Type.Object(
  {
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
    text: Type.String(),
    /** Characters of this stream before this chunk. */
    offset: Type.Integer({ minimum: 0 }),
  },
  { $id: 'RunOutputChunk', title: 'RunOutputChunk' },
)

const envelope = {
  id: Type.String({ description: 'Monotonic within the instance: resume with it as Last-Event-ID.' }),
  squadId: Type.String({ format: 'uuid' }),
  at: Timestamp,
  action: Type.String({ description: 'The activity action behind the event (`issue.status_changed` is an `issue.updated`).' }),
  entityType: Type.String(),
  entityId: Type.String(),
  actorType: Type.String(),
  actorId: Type.String(),
  agentId: Nullable(Type.String({ format: 'uuid' })),
  runId: Nullable(Type.String({ format: 'uuid' })),
  issueId: Nullable(Type.String({ format: 'uuid' })),
}

// What each event's activity entry records (docs/events.md). Every field is optional and more may
// come: the details are a delta written by the service that made the change, not a contract.
const O = Type.Optional
const S = Type.String()
const N = Type.Number()
const details = (name: string, fields: Record<string, ReturnType<typeof O>>) => Type.Object(fields, { additionalProperties: true, description: `What changed (the activity entry's details). ${name}` })
const issueDetails = { identifier: O(S) }
const budgetDetails = details('A budget threshold crossed.', {
  incidentId: O(S),
  scopeType: O(S),
  scopeId: O(S),
  scopeName: O(S),
  metric: O(S),
  level: O(S),
  thresholdPercent: O(N),
  limit: O(N),
  observed: O(N),
  period: O(S),
})
const runDetails = details("The run's reason, and its issue.", { reason: O(S), issueId: O(S), liveness: O(S), exitCode: O(N) })
const dataOf: Record<(typeof squadEventTypes)[number], ReturnType<typeof Type.Object>> = {
  'issue.created': details('', { ...issueDetails, status: O(S), priority: O(S) }),
  'issue.updated': details('For an update: the changed field names, and the status change.', { ...issueDetails, fields: O(S), from: O(S), to: O(S), commentId: O(S) }),
  'issue.commented': details('', { ...issueDetails, commentId: O(S), reopenedFrom: O(S) }),
  'issue.checked_out': details('`from` is the status it left.', { ...issueDetails, from: O(S) }),
  'issue.released': details('', issueDetails),
  'approval.created': details('', { type: O(S), title: O(S), issues: O(N), name: O(S), role: O(S), adapterType: O(Type.Union([S, Type.Null()])) }),
  'approval.decided': details('', {}),
  'run.queued': runDetails,
  'run.started': runDetails,
  'run.output': RunOutputData,
  'run.finished': runDetails,
  'cost.recorded': details('', {
    provider: O(S),
    model: O(S),
    billingType: O(S),
    costCents: O(Type.Union([N, Type.Null()])),
    costStatus: O(S),
    inputTokens: O(N),
    cachedInputTokens: O(N),
    outputTokens: O(N),
    issueId: O(S),
    identifier: O(S),
  }),
  'agent.updated': details('', {}),
  'budget.warning': budgetDetails,
  'budget.exceeded': budgetDetails,
  'routine.fired': details('`runId` is the routine run.', { runId: O(S), source: O(S), status: O(S), triggerId: O(S), issueId: O(S), linkedRunId: O(S), scheduledFor: O(S) }),
  'squad.created': details('', { name: O(S), slug: O(S) }),
  'squad.updated': details('For a rename the new `name`; for an archive `pausedAgents`.', { name: O(S), pausedAgents: O(N) }),
}

/** One message of the stream: `event:` is its `type`, `data:` this JSON, `id:` its `id`. */
const SquadEventSchema = Type.Union(
  squadEventTypes.map((type) => Type.Object({ type: Type.Literal(type), ...envelope, data: dataOf[type] })),
  { $id: 'SquadEvent', title: 'SquadEvent' },
)

/** Sent instead of a gap: the Last-Event-ID is older than the retention (or unknown); refetch state, then follow. */
const ResyncEventSchema = Type.Object(
  {
    type: Type.Literal('resync'),
    reason: Type.Union([Type.Literal('too_old'), Type.Literal('unknown_event')]),
    /** Where the stream goes on from: the first event after it follows. */
    lastEventId: Type.String(),
  },
  { $id: 'ResyncEvent', title: 'ResyncEvent' },
)

/** The last message of a stream the server ends (a slow consumer, storage trouble): resume after `lastEventId`. */
const CutoffEventSchema = Type.Object(
  {
    type: Type.Literal('cutoff'),
    reason: Type.Union([Type.Literal('slow_consumer'), Type.Literal('unavailable'), Type.Literal('unauthorized')]),
    lastEventId: Type.String(),
    retryAfterMs: Type.Integer(),
  },
  { $id: 'CutoffEvent', title: 'CutoffEvent' },
)

export const EventStreamMessage = Type.Union([SquadEventSchema, ResyncEventSchema, CutoffEventSchema], { $id: 'EventStreamMessage', title: 'EventStreamMessage' })

export const RunOutputQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 40, description: 'Only chunks after this chunk id (`next` of the previous answer).' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 200 })),
})
const StoredChunk = Type.Object(
  {
    id: Type.String(),
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
    text: Type.String(),
    offset: Type.Integer({ minimum: 0 }),
    at: Timestamp,
  },
  { $id: 'RunOutputStoredChunk', title: 'RunOutputStoredChunk' },
)
export const RunOutputBody = Type.Object(
  {
    runId: Type.String({ format: 'uuid' }),
    status: Type.String(),
    /** The kept tail of the live output (about the last 64 KiB), after `after`. */
    chunks: Type.Array(StoredChunk),
    /** Pass as `after` to read on; the same `after` when nothing new came. */
    next: Type.String(),
    /** The end of the output the run stored when it finished (null while it runs). */
    outputTail: Nullable(Type.String()),
  },
  { $id: 'RunOutput', title: 'RunOutput' },
)
