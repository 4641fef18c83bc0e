import type { ColumnType, RawBuilder } from 'kysely'
import type { RoutineContent, RoutineVariable } from '@slaw/core'

/** Tables of migration 0007-routines (camelCase; see schema.ts). */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
type Json<T> = ColumnType<T, RawBuilder<unknown>, RawBuilder<unknown>>

export interface RoutinesTable {
  id: string
  squadId: string
  title: string
  description: string | null
  projectId: string | null
  goalId: string | null
  parentIssueId: string | null
  assigneeAgentId: string | null
  priority: string
  status: string
  concurrencyPolicy: string
  catchUpPolicy: string
  variables: Json<RoutineVariable[]>
  env: Json<RoutineContent['env']>
  revisionId: string
  revisionNumber: number
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface RoutineRevisionsTable {
  id: string
  routineId: string
  squadId: string
  number: number
  change: string
  snapshot: Json<Record<string, unknown>>
  actorType: string
  actorId: string
  createdAt: CreatedAt
}

export interface RoutineTriggersTable {
  id: string
  squadId: string
  routineId: string
  kind: string
  label: string | null
  enabled: boolean
  cronExpression: string | null
  timezone: string | null
  nextFireAt: Date | null
  signingMode: string | null
  replayWindowSec: number | null
  publicId: string | null
  secretHash: string | null
  secretCiphertext: string | null
  secretRotatedAt: Date | null
  lastFiredAt: Date | null
  createdAt: CreatedAt
  updatedAt: Timestamp
}

export interface RoutineRunsTable {
  id: string
  squadId: string
  routineId: string
  triggerId: string | null
  source: string
  status: string
  scheduledFor: Date | null
  idempotencyKey: string | null
  variables: Json<Record<string, string | number | boolean>>
  payload: Json<Record<string, unknown> | null> | null
  projectId: string | null
  assigneeAgentId: string | null
  issueId: string | null
  linkedRunId: string | null
  error: string | null
  createdAt: CreatedAt
  finishedAt: Date | null
}

export interface RoutineTables {
  routines: RoutinesTable
  routineRevisions: RoutineRevisionsTable
  routineTriggers: RoutineTriggersTable
  routineRuns: RoutineRunsTable
}
