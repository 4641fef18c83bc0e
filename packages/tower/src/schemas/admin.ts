import { Type } from '@sinclair/typebox'
import {
  AgentUpsert,
  ActivityEventFact,
  CostEventFact,
  EnrollmentStateSchema,
  IssueUpsert,
  LimitSpec,
  ProjectUpsert,
  RequestLiveStreamDirective,
  RequestReconciliationDirective,
  RunEventFact,
  SetSyncIntervalDirective,
  Skill,
  SkillFile,
  SkillKey,
  SquadSkillUpsert,
  SquadUpsert,
  StopLiveStreamDirective,
  DiscriminatedUnion,
  Nullable,
} from '@slaw/core/ingest'

const Iso = Type.String({ format: 'date-time' })

export const InstanceView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  machineId: Type.String(),
  instanceId: Type.String(),
  hostname: Type.String(),
  os: Type.String(),
  slawVersion: Type.String(),
  capabilities: Type.Object({ reportIssueTitles: Type.Boolean(), liveStream: Type.Boolean() }),
  state: Nullable(EnrollmentStateSchema),
  enrollmentId: Nullable(Type.String()),
  pendingEnrollmentId: Nullable(Type.String()),
  online: Type.Boolean(),
  status: Nullable(Type.Union([Type.Literal('ok'), Type.Literal('degraded')])),
  lastSeenAt: Nullable(Iso),
  lastHeartbeatAt: Nullable(Iso),
  heartbeatIntervalSec: Type.Integer(),
  uptimeSec: Nullable(Type.Integer()),
  counts: Nullable(Type.Object({ squads: Type.Integer(), agents: Type.Integer(), activeRuns: Type.Integer(), openIssues: Type.Integer() })),
  spend: Nullable(Type.Object({ todayCents: Type.Integer(), monthCents: Type.Integer() })),
  lastEventCursor: Nullable(Type.String()),
  acknowledgedCursor: Nullable(Type.String()),
  appliedLimitVersion: Nullable(Type.Integer()),
  appliedSkillCatalogVersion: Nullable(Type.Integer()),
  lastSyncAt: Nullable(Iso),
  lastManifestAt: Nullable(Iso),
  createdAt: Iso,
})

export const InstanceListQuery = Type.Object({
  state: Type.Optional(EnrollmentStateSchema),
  online: Type.Optional(Type.Boolean()),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  cursor: Type.Optional(Type.String({ maxLength: 500 })),
})

export const EnrollmentView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  state: EnrollmentStateSchema,
  instance: Type.Object({
    id: Type.String({ format: 'uuid' }),
    machineId: Type.String(),
    instanceId: Type.String(),
    hostname: Type.String(),
    os: Type.String(),
    slawVersion: Type.String(),
  }),
  /** Whether the instance already received its key (it is shown once). */
  keyDelivered: Type.Boolean(),
  decidedBy: Nullable(Type.String()),
  decidedAt: Nullable(Iso),
  /** `superseded` when a key-recovery enrollment replaced this one. */
  reason: Nullable(Type.String()),
  createdAt: Iso,
})

export const EnrollmentListQuery = Type.Object({
  state: Type.Optional(EnrollmentStateSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  cursor: Type.Optional(Type.String({ maxLength: 500 })),
})

const HostnamePattern = Type.String({ minLength: 1, maxLength: 255 })
export const AutoApproveRuleInput = DiscriminatedUnion('kind', [
  Type.Object({ kind: Type.Literal('all'), note: Type.Optional(Type.String({ maxLength: 500 })) }),
  Type.Object({ kind: Type.Literal('hostname'), pattern: HostnamePattern, note: Type.Optional(Type.String({ maxLength: 500 })) }),
  Type.Object({
    kind: Type.Literal('machine_ids'),
    machineIds: Type.Array(Type.String({ minLength: 8, maxLength: 128 }), { minItems: 1, maxItems: 10_000 }),
    note: Type.Optional(Type.String({ maxLength: 500 })),
  }),
])

const RuleMeta = {
  id: Type.String(),
  source: Type.Union([Type.Literal('config'), Type.Literal('admin')]),
  createdAt: Nullable(Iso),
  note: Type.Optional(Type.String()),
}
export const AutoApproveRule = Type.Union([
  Type.Object({ ...RuleMeta, kind: Type.Literal('all') }),
  Type.Object({ ...RuleMeta, kind: Type.Literal('hostname'), pattern: Type.String() }),
  Type.Object({ ...RuleMeta, kind: Type.Literal('machine_ids'), machineIds: Type.Array(Type.String()) }),
])

export const SkillKeyParams = Type.Object({ key: SkillKey })

export const SkillPublishBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 4000 }), Type.Null()])),
  category: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  trustLevel: Type.String({ minLength: 1, maxLength: 100 }),
  markdown: Type.String({ maxLength: 1024 * 1024 }),
  files: Type.Optional(Type.Array(SkillFile, { maxItems: 200 })),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})

export const AdminSkill = Type.Composite([Skill, Type.Object({ published: Type.Boolean() })])

/** A LimitSpec without its version (the tower assigns it). */
export const LimitInput = Type.Object({
  costLimitCents: LimitSpec.properties.costLimitCents,
  tokenLimit: LimitSpec.properties.tokenLimit,
  window: Type.Optional(LimitSpec.properties.window),
  warnPercent: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  mode: LimitSpec.properties.mode,
})

export const QueueableDirective = DiscriminatedUnion('kind', [SetSyncIntervalDirective, RequestReconciliationDirective, RequestLiveStreamDirective, StopLiveStreamDirective])

export const QueuedDirective = Type.Object({
  id: Type.Integer(),
  directive: QueueableDirective,
  createdAt: Iso,
  deliveredAt: Nullable(Iso),
})

export const syncedCollections = {
  squads: { type: 'squad', schema: SquadUpsert },
  agents: { type: 'agent', schema: AgentUpsert },
  'squad-skills': { type: 'squad_skill', schema: SquadSkillUpsert },
  projects: { type: 'project', schema: ProjectUpsert },
  issues: { type: 'issue', schema: IssueUpsert },
} as const

export const syncedFacts = {
  'cost-events': { kind: 'cost_event', schema: CostEventFact },
  'run-events': { kind: 'run_event', schema: RunEventFact },
  'activity-events': { kind: 'activity_event', schema: ActivityEventFact },
} as const
