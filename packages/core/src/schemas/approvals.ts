import { Type, type Static } from '@sinclair/typebox'
import { ApprovalCommentRecord, ApprovalRecord, approvalStatuses, type Approval, type ApprovalComment } from '../contracts/governance.js'
import { CommaList, Nullable, Uuid, iso, isoOrNull } from './common.js'
import { isPrivileged, type Actor } from '../services/foundation/actor.js'

const ApprovalStatus = ApprovalRecord.properties.status

export const ApprovalSchema = Type.Object(ApprovalRecord.properties, { $id: 'Approval', title: 'Approval' })
export const ApprovalDetailSchema = Type.Object({ ...ApprovalRecord.properties, issueIds: Type.Array(Uuid) }, { $id: 'ApprovalDetail', title: 'ApprovalDetail' })

const BoardPayload = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 500 }),
    summary: Type.String({ minLength: 1, maxLength: 20_000 }),
    recommendedAction: Type.Optional(Nullable(Type.String({ maxLength: 5_000 }))),
    risks: Type.Optional(Type.Array(Type.String({ maxLength: 2_000 }), { maxItems: 50 })),
  },
  { additionalProperties: false },
)

export const HireBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    role: Type.String({ minLength: 1, maxLength: 100 }),
    reason: Type.Optional(Nullable(Type.String({ maxLength: 5_000 }))),
    adapterType: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    reportsToAgentId: Type.Optional(Nullable(Uuid)),
    prompt: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
    desiredSkills: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
    adapterConfig: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 100 })),
  },
  { additionalProperties: false },
)

export const CreateApprovalBody = Type.Object(
  {
    type: Type.Literal('request_board_approval'),
    requestedByAgentId: Uuid,
    issueIds: Type.Optional(Type.Array(Uuid, { maxItems: 100 })),
    payload: BoardPayload,
  },
  { additionalProperties: false },
)

export const DecisionBody = Type.Object({ decisionNote: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))) }, { additionalProperties: false })

/** The payload has the shape of the approval's type; the service checks which one applies. */
export const ResubmitBody = Type.Object({ payload: Type.Union([BoardPayload, HireBody]) }, { additionalProperties: false })

export const ApprovalListQuery = Type.Object({
  status: Type.Optional(CommaList(approvalStatuses.join('|'))),
  /** Only approvals that name this issue (an issue of another squad names none here). */
  issueId: Type.Optional(Uuid),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
})

export const HireAccepted = Type.Object({ approvalId: Uuid, status: ApprovalStatus, approval: ApprovalSchema })

// The author type is documented as a plain string, as it always was.
export const ApprovalCommentSchema = Type.Object({ ...Type.Omit(ApprovalCommentRecord, ['squadId']).properties, authorType: Type.String() }, { $id: 'ApprovalComment', title: 'ApprovalComment' })
export const CreateApprovalCommentBody = Type.Object({ body: Type.String({ minLength: 1, maxLength: 50_000 }) }, { additionalProperties: false })

/**
 * Fields are listed, not spread: the payload is filtered on purpose. A hire's `adapterConfig` (what
 * the hired agent will run) is shown to an Operator, who decides the hire, and to nobody else.
 */
export const presentApproval = (a: Approval, viewer?: Actor): Static<typeof ApprovalSchema> => ({
  id: a.id,
  squadId: a.squadId,
  type: a.type,
  status: a.status,
  requestedByAgentId: a.requestedByAgentId,
  payload: viewer && isPrivileged(viewer) ? a.payload : withoutAdapterConfig(a.payload),
  decisionNote: a.decisionNote,
  decidedBy: a.decidedBy,
  decidedAt: isoOrNull(a.decidedAt),
  hiredAgentId: a.hiredAgentId,
  revision: a.revision,
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
})

export const presentApprovalDetail = (a: Approval & { issueIds: string[] }, viewer?: Actor): Static<typeof ApprovalDetailSchema> => ({ ...presentApproval(a, viewer), issueIds: a.issueIds })

export const presentApprovalComment = (c: ApprovalComment): Static<typeof ApprovalCommentSchema> => ({ ...c, createdAt: iso(c.createdAt) })

function withoutAdapterConfig(payload: Record<string, unknown>): Record<string, unknown> {
  if (!('adapterConfig' in payload)) return payload
  const { adapterConfig: _hidden, ...rest } = payload
  return rest
}
