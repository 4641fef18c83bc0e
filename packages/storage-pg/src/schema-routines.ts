import type { Routine, RoutineRevision, RoutineRun, RoutineTrigger } from '@slaw/core'
import type { Table } from './table.js'

/** Tables of migration 0007-routines (derived from their records; see table.ts). */

export type RoutinesTable = Table<Routine, { json: 'variables' | 'env' }>

export type RoutineRevisionsTable = Table<RoutineRevision, { json: 'snapshot' }>

export type RoutineTriggersTable = Table<RoutineTrigger>

export type RoutineRunsTable = Table<RoutineRun, { json: 'variables' | 'payload' }>

export interface RoutineTables {
  routines: RoutinesTable
  routineRevisions: RoutineRevisionsTable
  routineTriggers: RoutineTriggersTable
  routineRuns: RoutineRunsTable
}
