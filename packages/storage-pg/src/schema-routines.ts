import type { Routine, RoutineRevision, RoutineRun, RoutineTrigger } from '@slaw/core'
import type { Table } from './table.js'

/** Tables of migration 0007-routines (derived from their records; see table.ts). */

type RoutinesTable = Table<Routine, { json: 'variables' | 'env' }>

type RoutineRevisionsTable = Table<RoutineRevision, { json: 'snapshot' }>

type RoutineTriggersTable = Table<RoutineTrigger>

type RoutineRunsTable = Table<RoutineRun, { json: 'variables' | 'payload' }>

export interface RoutineTables {
  routines: RoutinesTable
  routineRevisions: RoutineRevisionsTable
  routineTriggers: RoutineTriggersTable
  routineRuns: RoutineRunsTable
}
