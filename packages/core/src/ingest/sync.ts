import { Type, type Static } from '@sinclair/typebox'
import { ACTIVITY_ACTIONS, MAX_FACTS, MAX_UPSERTS } from './constants.js'
import { Count, DiscriminatedUnion, Label, LocalId, Maybe, Nullable, ProtocolVersion, Text, Timestamp } from './common.js'
import { Directive } from './directives.js'

// Upserts: the latest state of an entity, keyed (machineId, instanceId, localId); the last write by updatedAt wins.

export const SquadUpsert = Type.Object({
  type: Type.Literal('squad'),
  localId: LocalId,
  name: Text,
  status: Label,
  budgetMonthlyCents: Nullable(Count),
  spentMonthlyCents: Count,
  updatedAt: Timestamp,
})

export const AgentUpsert = Type.Object({
  type: Type.Literal('agent'),
  localId: LocalId,
  squadLocalId: LocalId,
  name: Text,
  role: Label,
  status: Label,
  adapterType: Label,
  budgetMonthlyCents: Nullable(Count),
  spentMonthlyCents: Count,
  title: Maybe(Text),
  reportsToLocalId: Maybe(LocalId),
  updatedAt: Timestamp,
})

export const SquadSkillUpsert = Type.Object({
  type: Type.Literal('squad_skill'),
  localId: LocalId,
  squadLocalId: LocalId,
  key: Type.String({ minLength: 1, maxLength: 200 }),
  name: Text,
  description: Maybe(Type.String({ maxLength: 4000 })),
  sourceType: Label,
  trustLevel: Label,
  updatedAt: Timestamp,
})

export const ProjectUpsert = Type.Object({
  type: Type.Literal('project'),
  localId: LocalId,
  squadLocalId: LocalId,
  name: Text,
  status: Label,
  updatedAt: Timestamp,
})

export const IssueUpsert = Type.Object({
  type: Type.Literal('issue'),
  localId: LocalId,
  squadLocalId: LocalId,
  projectLocalId: Nullable(LocalId),
  /** The issue identifier instead of the title when the instance enrolled with reportIssueTitles false. */
  title: Text,
  status: Label,
  assigneeAgentLocalId: Nullable(LocalId),
  updatedAt: Timestamp,
})

export const Upsert = DiscriminatedUnion('type', [SquadUpsert, AgentUpsert, SquadSkillUpsert, ProjectUpsert, IssueUpsert])
export type Upsert = Static<typeof Upsert>
export type SquadUpsert = Static<typeof SquadUpsert>
export type AgentUpsert = Static<typeof AgentUpsert>
export type SquadSkillUpsert = Static<typeof SquadSkillUpsert>
export type ProjectUpsert = Static<typeof ProjectUpsert>
export type IssueUpsert = Static<typeof IssueUpsert>

// Facts: append-only events, deduplicated on (machineId, instanceId, localId).

export const BillingType = Type.Union([Type.Literal('metered_api'), Type.Literal('subscription_included'), Type.Literal('subscription_overage')])

export const CostEventFact = Type.Object({
  type: Type.Literal('cost_event'),
  localId: LocalId,
  squadLocalId: LocalId,
  agentLocalId: Maybe(LocalId),
  issueLocalId: Maybe(LocalId),
  projectLocalId: Maybe(LocalId),
  provider: Label,
  biller: Maybe(Label),
  billingType: BillingType,
  model: Type.String({ minLength: 1, maxLength: 200 }),
  inputTokens: Count,
  cachedInputTokens: Count,
  outputTokens: Count,
  costCents: Count,
  occurredAt: Timestamp,
})

/**
 * A run, as the tower sees it. Whoever builds it (core's run engine writes it to the outbox) sends
 * `startedAt` and `finishedAt` as null while unknown, never leaves the keys out, and maps a local
 * `timed_out` run to `failed` (docs/ingest-protocol.md).
 */
export const RunEventFact = Type.Object({
  type: Type.Literal('run_event'),
  localId: LocalId,
  agentLocalId: LocalId,
  squadLocalId: LocalId,
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('cancelled')]),
  startedAt: Maybe(Timestamp),
  finishedAt: Maybe(Timestamp),
  inputTokens: Count,
  outputTokens: Count,
  occurredAt: Timestamp,
})

export const ActivityActionSchema = Type.Union(ACTIVITY_ACTIONS.map((a) => Type.Literal(a)))

/** A flat object of strings, numbers and booleans, already filtered per action by the instance. */
export const ActivityDetails = Type.Record(Type.String({ maxLength: 100 }), Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean()]), { maxProperties: 50 })

export const ActivityEventFact = Type.Object({
  type: Type.Literal('activity_event'),
  localId: LocalId,
  squadLocalId: Maybe(LocalId),
  /** Only the whitelisted actions (ACTIVITY_ACTIONS); anything else fails validation. */
  action: ActivityActionSchema,
  entityRef: Maybe(Type.String({ maxLength: 200 })),
  details: ActivityDetails,
  occurredAt: Timestamp,
})

export const Fact = DiscriminatedUnion('type', [CostEventFact, RunEventFact, ActivityEventFact])
export type Fact = Static<typeof Fact>
export type CostEventFact = Static<typeof CostEventFact>
export type RunEventFact = Static<typeof RunEventFact>
export type ActivityEventFact = Static<typeof ActivityEventFact>

/** POST /sync: one cursored batch. The instance advances its cursor only after the acknowledgement. */
export const SyncRequest = Type.Object({
  protocolVersion: ProtocolVersion,
  sentAt: Timestamp,
  /** The zero-padded decimal sequence number of the last outbox row in the batch. */
  batchCursor: Type.String({ minLength: 1, maxLength: 128 }),
  upserts: Type.Array(Upsert, { maxItems: MAX_UPSERTS }),
  facts: Type.Array(Fact, { maxItems: MAX_FACTS }),
})
export type SyncRequest = Static<typeof SyncRequest>

export const SyncResponse = Type.Object({
  /** The batchCursor of the batch just stored, echoed (docs/ingest-protocol.md); the sender moves its cursor only when it is at or past its own. */
  acknowledgedCursor: Type.String(),
  accepted: Type.Object({
    /** Upserts received and applied (a stale one, older than what is stored, is accepted and ignored). */
    upserts: Count,
    /** Facts newly stored. */
    facts: Count,
    /** Facts already stored before (a resent batch): not stored twice. */
    deduplicated: Count,
  }),
  directives: Type.Array(Directive),
})
export type SyncResponse = Static<typeof SyncResponse>
