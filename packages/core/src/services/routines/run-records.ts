import { SlawError, invalid } from '../../errors.js'
import type { NewRoutineRun, Routine, RoutineRun, RoutineRunSource, RoutineTrigger } from '../../contracts/routines.js'
import type { ActivityInput } from '../audit/activity-recorder.js'
import { maxRoutineTitle, renderTemplate, resolveVariables, type VariableValue } from './variables.js'

/** What one fire asks for, whatever its source (manual, API, webhook). */
export interface RunRequest {
  source: RoutineRunSource
  triggerId: string | null
  variables: Record<string, unknown> | undefined
  payload: Record<string, unknown> | undefined
  projectId: string | null | undefined
  assigneeAgentId: string | null | undefined
  idempotencyKey: string | null
  /** The agent whose key asked for the run (manual/API by an agent key), else null. */
  requestedByAgentId: string | null
}

export type Outcome = Pick<RoutineRun, 'status' | 'issueId' | 'linkedRunId'> & { variables: Record<string, VariableValue> }

/** A run row as first written: queued, no outcome yet. */
export function newRun(routine: Routine, req: RunRequest, id: string): NewRoutineRun {
  return {
    id,
    squadId: routine.squadId,
    routineId: routine.id,
    triggerId: req.triggerId,
    source: req.source,
    status: 'queued',
    scheduledFor: null,
    idempotencyKey: req.idempotencyKey,
    variables: {},
    payload: null,
    projectId: req.projectId ?? null,
    assigneeAgentId: req.assigneeAgentId ?? null,
    requestedByAgentId: req.requestedByAgentId,
    issueId: null,
    linkedRunId: null,
    error: null,
  }
}

export function assertFireable(routine: Routine): void {
  if (routine.status !== 'active') throw new SlawError('invalid_state', `The routine is ${routine.status}; only an active routine fires.`)
}

/** The issue a run would create: variables resolved, title and description rendered. Throws 400 for bad values or a blank or long title. */
export function renderIssue(
  routine: Routine,
  variables: Record<string, unknown> | undefined,
  payload: Record<string, unknown> | undefined,
): { values: Record<string, VariableValue>; title: string; description: string | null } {
  const values = resolveVariables(routine.variables, variables, payload)
  const title = renderTemplate(routine.title, routine.variables, values).trim()
  if (!title) throw invalid('/title', 'the title is blank after substituting the variables')
  if (title.length > maxRoutineTitle) throw invalid('/title', `the title is ${title.length} characters after substituting the variables; at most ${maxRoutineTitle}`)
  const description = routine.description === null ? null : renderTemplate(routine.description, routine.variables, values)
  return { values, title, description }
}

/**
 * Whether a fire whose signature was checked against `seen` may go on with the trigger as it is
 * under the routine's lock: still there and enabled, checked the same way with the same secret.
 */
export function sameSigning(current: RoutineTrigger | undefined, seen: RoutineTrigger): boolean {
  return (
    current?.enabled === true &&
    current.kind === seen.kind &&
    current.signingMode === seen.signingMode &&
    current.replayWindowSec === seen.replayWindowSec &&
    current.secretHash === seen.secretHash &&
    current.secretCiphertext === seen.secretCiphertext
  )
}

/** The `routine.fired` activity entry of a finished run. */
export function firedEntry(routine: Routine, run: Pick<RoutineRun, 'id' | 'source' | 'status' | 'triggerId' | 'issueId' | 'linkedRunId' | 'scheduledFor'>): ActivityInput {
  return {
    squadId: routine.squadId,
    action: 'routine.fired',
    entityType: 'routine',
    entityId: routine.id,
    details: {
      runId: run.id,
      source: run.source,
      status: run.status,
      ...(run.triggerId ? { triggerId: run.triggerId } : {}),
      ...(run.issueId ? { issueId: run.issueId } : {}),
      ...(run.linkedRunId ? { linkedRunId: run.linkedRunId } : {}),
      ...(run.scheduledFor ? { scheduledFor: run.scheduledFor.toISOString() } : {}),
    },
  }
}
