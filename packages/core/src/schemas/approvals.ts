import { Type } from '@sinclair/typebox'
import { approvalStatuses, type Approval, type ApprovalComment } from '../contracts/governance.js'
import { CommaList, Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

export const ApprovalStatus = Type.Union(approvalStatuses.map((s) => Type.Literal(s)))
export const ApprovalType = Type.Union([Type.Literal('request_board_approval'), Type.Literal('hire_agent')])

const approvalFields = {
  id: Uuid,
  squadId: Uuid,
  type: ApprovalType,
  status: ApprovalStatus,
  requestedByAgentId: Nullable(Uuid),
  payload: Type.Record(Type.String(), Type.Unknown()),
  decisionNote: Nullable(Type.String()),
  decidedBy: Nullable(Type.String()),
  decidedAt: Nullable(Timestamp),
  hiredAgentId: Nullable(Uuid),
  revision: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}
export const ApprovalSchema = Type.Object(approvalFields, { $id: 'Approval', title: 'Approval' })
export const ApprovalDetailSchema = Type.Object({ ...approvalFields, issueIds: Type.Array(Uuid) }, { $id: 'ApprovalDetail', title: 'ApprovalDetail' })

export const BoardPayload = Type.Object(
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
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
})

export const HireAccepted = Type.Object({ approvalId: Uuid, status: ApprovalStatus, approval: ApprovalSchema })

export const ApprovalCommentSchema = Type.Object(
  { id: Uuid, approvalId: Uuid, body: Type.String(), authorType: Type.String(), authorId: Type.String(), createdAt: Timestamp },
  { $id: 'ApprovalComment', title: 'ApprovalComment' },
)
export const CreateApprovalCommentBody = Type.Object({ body: Type.String({ minLength: 1, maxLength: 50_000 }) }, { additionalProperties: false })

export const presentApproval = (a: Approval) => ({
  id: a.id,
  squadId: a.squadId,
  type: a.type,
  status: a.status,
  requestedByAgentId: a.requestedByAgentId,
  // A hire's adapter config stays with the Operator (it shows on the hired agent), never in the approval.
  payload: withoutAdapterConfig(a.payload),
  decisionNote: a.decisionNote,
  decidedBy: a.decidedBy,
  decidedAt: isoOrNull(a.decidedAt),
  hiredAgentId: a.hiredAgentId,
  revision: a.revision,
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
})

export const presentApprovalDetail = (a: Approval & { issueIds: string[] }) => ({ ...presentApproval(a), issueIds: a.issueIds })

export const presentApprovalComment = (c: ApprovalComment) => ({
  id: c.id,
  approvalId: c.approvalId,
  body: c.body,
  authorType: c.authorType,
  authorId: c.authorId,
  createdAt: iso(c.createdAt),
})

function withoutAdapterConfig(payload: Record<string, unknown>): Record<string, unknown> {
  if (!('adapterConfig' in payload)) return payload
  const { adapterConfig: _hidden, ...rest } = payload
  return rest
}
