import { Type, type Static } from '@sinclair/typebox'
import { Count, ProtocolVersion, Timestamp } from './common.js'

/** POST /manifest: nightly reconciliation of what the instance holds against what the tower stored. */
export const ManifestRequest = Type.Object({
  protocolVersion: ProtocolVersion,
  sentAt: Timestamp,
  counts: Type.Object({ squads: Count, agents: Count, projects: Count, issues: Count, costEvents: Count }),
})
export type ManifestRequest = Static<typeof ManifestRequest>

export const ResyncTypeSchema = Type.Union([Type.Literal('squad'), Type.Literal('agent'), Type.Literal('project'), Type.Literal('issue'), Type.Literal('cost_event')])

/** When resyncTypes is non-empty the instance queues a full resync of those types in its next sync batch. */
export const ManifestResponse = Type.Object({
  inSync: Type.Boolean(),
  resyncTypes: Type.Array(ResyncTypeSchema),
})
export type ManifestResponse = Static<typeof ManifestResponse>
