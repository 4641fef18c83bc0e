import { Type, type StaticDecode } from '@sinclair/typebox'
import { actorTypes } from './activity.js'
import { DateTime, JsonObject, Nullable, OneOf, Uuid } from './fields.js'

export const issueStatuses = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked', 'done', 'cancelled'] as const
export type IssueStatus = (typeof issueStatuses)[number]
export const issuePriorities = ['critical', 'high', 'medium', 'low'] as const
export type IssuePriority = (typeof issuePriorities)[number]

export const IssueRecord = Type.Object({
  id: Uuid,
  squadId: Uuid,
  number: Type.Integer(),
  identifier: Type.String(),
  title: Type.String(),
  description: Nullable(Type.String()),
  status: OneOf(issueStatuses),
  priority: OneOf(issuePriorities),
  assigneeAgentId: Nullable(Uuid),
  assigneeUserId: Nullable(Type.String()),
  checkoutAgentId: Nullable(Uuid),
  checkedOutAt: Nullable(DateTime),
  parentId: Nullable(Uuid),
  goalId: Nullable(Uuid),
  projectId: Nullable(Uuid),
  billingCode: Nullable(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Issue = StaticDecode<typeof IssueRecord>

/** The short form lists and inboxes return. */
export const IssueSummaryRecord = Type.Pick(IssueRecord, ['id', 'identifier', 'title', 'status', 'priority', 'assigneeAgentId'])
export type IssueSummary = StaticDecode<typeof IssueSummaryRecord>

export const IssueRefRecord = Type.Pick(IssueRecord, ['id', 'identifier', 'title', 'status'])
export type IssueRef = StaticDecode<typeof IssueRefRecord>

export const CommentRecord = Type.Object({
  id: Uuid,
  issueId: Uuid,
  squadId: Uuid,
  body: Type.String(),
  authorType: OneOf(actorTypes),
  authorId: Type.String(),
  createdAt: DateTime,
})
export type Comment = StaticDecode<typeof CommentRecord>

export const IssueDocumentRecord = Type.Object({
  id: Uuid,
  issueId: Uuid,
  key: Type.String(),
  title: Type.String(),
  format: Type.Literal('markdown'),
  body: Type.String(),
  revisionId: Uuid,
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type IssueDocument = StaticDecode<typeof IssueDocumentRecord>

export const interactionKinds = ['request_confirmation', 'suggest_tasks', 'ask_user_questions'] as const
export type InteractionKind = (typeof interactionKinds)[number]
export const interactionStatuses = ['pending', 'accepted', 'rejected', 'responded'] as const
export type InteractionStatus = (typeof interactionStatuses)[number]

export const InteractionRecord = Type.Object({
  id: Uuid,
  issueId: Uuid,
  squadId: Uuid,
  kind: OneOf(interactionKinds),
  payload: JsonObject(),
  continuationPolicy: Nullable(Type.Literal('wake_assignee')),
  idempotencyKey: Nullable(Type.String()),
  status: OneOf(interactionStatuses),
  response: Nullable(JsonObject()),
  createdByType: OneOf(actorTypes),
  createdById: Type.String(),
  resolvedAt: Nullable(DateTime),
  createdAt: DateTime,
})
export type Interaction = StaticDecode<typeof InteractionRecord>
