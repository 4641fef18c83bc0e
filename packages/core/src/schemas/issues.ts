import { Type, type Static } from '@sinclair/typebox'
import {
  CommentRecord,
  InteractionRecord,
  IssueDocumentRecord,
  IssueRecord,
  IssueRefRecord,
  IssueSummaryRecord,
  issueStatuses,
  type Comment,
  type Interaction,
  type Issue,
  type IssueDocument,
} from '../records.js'
import type { IssueDetail } from '../services/work/issues.js'
import { CommaList, Nullable, Timestamp, Uuid, iso, isoOrNull } from './common.js'

const IssueStatus = IssueRecord.properties.status
export const IssuePriority = IssueRecord.properties.priority

export const IssueRefSchema = Type.Object(IssueRefRecord.properties, { $id: 'IssueRef', title: 'IssueRef' })

// The issue's number shows only inside its identifier.
const issueFields = Type.Omit(IssueRecord, ['number']).properties
export const IssueSchema = Type.Object(issueFields, { $id: 'Issue', title: 'Issue' })
export const IssueDetailSchema = Type.Object(
  {
    ...issueFields,
    blockedByIssueIds: Type.Array(Uuid),
    blockedBy: Type.Array(IssueRefSchema),
    blocks: Type.Array(IssueRefSchema),
    ancestors: Type.Array(IssueRefSchema),
  },
  { $id: 'IssueDetail', title: 'IssueDetail' },
)
export const IssueSummarySchema = Type.Object(IssueSummaryRecord.properties, { $id: 'IssueSummary', title: 'IssueSummary' })
export const InboxItem = Type.Object(Type.Pick(IssueRecord, ['id', 'identifier', 'title', 'status', 'priority']).properties, { $id: 'InboxItem', title: 'InboxItem' })

const statusPattern = issueStatuses.join('|')
export const ListIssuesQuery = Type.Object({
  status: Type.Optional(CommaList(statusPattern)),
  assigneeAgentId: Type.Optional(Type.String({ maxLength: 64 })),
  projectId: Type.Optional(Type.String({ maxLength: 64 })),
  q: Type.Optional(Type.String({ maxLength: 500 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
})
export const InboxQuery = Type.Object({
  status: Type.Optional(CommaList(statusPattern)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
})

const BlockedBy = Type.Array(Uuid, { maxItems: 200 })
export const CreateIssueBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 500 }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 200_000 }))),
    status: Type.Optional(IssueStatus),
    priority: Type.Optional(IssuePriority),
    assigneeAgentId: Type.Optional(Nullable(Uuid)),
    parentId: Type.Optional(Nullable(Uuid)),
    goalId: Type.Optional(Nullable(Uuid)),
    projectId: Type.Optional(Nullable(Uuid)),
    blockedByIssueIds: Type.Optional(BlockedBy),
    billingCode: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  },
  { additionalProperties: false },
)
export const UpdateIssueBody = Type.Object(
  {
    status: Type.Optional(IssueStatus),
    priority: Type.Optional(IssuePriority),
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 200_000 }))),
    assigneeAgentId: Type.Optional(Nullable(Uuid)),
    assigneeUserId: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    blockedByIssueIds: Type.Optional(BlockedBy),
    comment: Type.Optional(Type.String({ maxLength: 100_000 })),
    projectId: Type.Optional(Nullable(Uuid)),
    goalId: Type.Optional(Nullable(Uuid)),
  },
  { additionalProperties: false },
)
export const CheckoutBody = Type.Object({ agentId: Uuid, expectedStatuses: Type.Optional(Type.Array(IssueStatus, { minItems: 1, maxItems: 7 })) }, { additionalProperties: false })

// The API has always documented actor types as plain strings (comments, interactions, activity).
export const CommentSchema = Type.Object({ ...Type.Omit(CommentRecord, ['squadId']).properties, authorType: Type.String() }, { $id: 'Comment', title: 'Comment' })
export const CommentsQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 64 })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
})
export const CreateCommentBody = Type.Object({ body: Type.String({ minLength: 1, maxLength: 100_000 }), reopen: Type.Optional(Type.Boolean()) }, { additionalProperties: false })
export const CommentParams = Type.Object({ id: Type.String({ maxLength: 200 }), commentId: Type.String({ maxLength: 200 }) })

export const DocumentSchema = Type.Object(IssueDocumentRecord.properties, { $id: 'IssueDocument', title: 'IssueDocument' })
export const DocumentParams = Type.Object({ id: Type.String({ maxLength: 200 }), key: Type.String({ maxLength: 200 }) })
export const PutDocumentBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 500 }),
    format: Type.Literal('markdown'),
    body: Type.String({ maxLength: 1_000_000 }),
    baseRevisionId: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  },
  { additionalProperties: false },
)

const InteractionKind = InteractionRecord.properties.kind
export const InteractionSchema = Type.Object({ ...Type.Omit(InteractionRecord, ['squadId']).properties, createdByType: Type.String() }, { $id: 'Interaction', title: 'Interaction' })
export const CreateInteractionBody = Type.Object(
  {
    kind: InteractionKind,
    payload: Type.Record(Type.String(), Type.Unknown(), { maxProperties: 50 }),
    continuationPolicy: Type.Optional(Type.Literal('wake_assignee')),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
)
export const InteractionParams = Type.Object({ id: Type.String({ maxLength: 200 }), interactionId: Type.String({ maxLength: 200 }) })
export const ResolveInteractionBody = Type.Object(
  { note: Type.Optional(Type.String({ maxLength: 10_000 })), response: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 })) },
  { additionalProperties: false, description: 'May be omitted: no body is the same as {}. `respond` needs `response`.' },
)

export const CommentCursor = Type.Object({ totalComments: Type.Integer(), latestCommentId: Nullable(Uuid), latestCommentAt: Nullable(Timestamp) }, { $id: 'CommentCursor', title: 'CommentCursor' })

export const presentIssue = (i: Issue): Static<typeof IssueSchema> => ({
  ...i,
  checkedOutAt: isoOrNull(i.checkedOutAt),
  createdAt: iso(i.createdAt),
  updatedAt: iso(i.updatedAt),
})
export const presentIssueDetail = (i: IssueDetail): Static<typeof IssueDetailSchema> => ({
  ...presentIssue(i),
  blockedByIssueIds: i.blockedByIssueIds,
  blockedBy: i.blockedBy,
  blocks: i.blocks,
  ancestors: i.ancestors,
})
export const presentComment = (c: Comment): Static<typeof CommentSchema> => ({ ...c, createdAt: iso(c.createdAt) })
export const presentDocument = (d: IssueDocument): Static<typeof DocumentSchema> => ({ ...d, createdAt: iso(d.createdAt), updatedAt: iso(d.updatedAt) })
export const presentInteraction = (x: Interaction): Static<typeof InteractionSchema> => ({ ...x, resolvedAt: isoOrNull(x.resolvedAt), createdAt: iso(x.createdAt) })
