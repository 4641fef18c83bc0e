import { SlawError } from '../../errors.js'
import type { EnvWriter, Routine, RoutineTrigger } from '../../contracts/routines.js'
import type { Actor } from '../foundation/actor.js'
import type { EnvBinding } from '../secrets/env-bindings.js'

/**
 * Who may change a routine (docs/security.md, "Routines and triggers"). Agents delegate work through
 * routines, but an agent key must not change what another agent runs or what an Operator set up:
 *
 * - An agent key changes (PATCH, restore, trigger create/update/delete, secret rotation) only
 *   routines it created itself; Operator-created routines and other agents' are read-only to it.
 * - On its own routine, it may not change a trigger an Operator added, nor an env an Operator wrote.
 * - It may not move a routine whose env an Operator wrote or that binds a secret to another
 *   assignee, nor run such a routine (or an Operator's routine) for another assignee: a routine's
 *   secrets go only to the assignee an Operator chose.
 */

/** Quotas on what agent keys create (createInstance `routines`, docs/routines.md). */
export interface RoutineLimits {
  /** Routines agent keys may have created in one squad (all agents together). Default 20. */
  maxAgentRoutinesPerSquad?: number
  /** Shortest interval between two due times of a schedule an agent key writes, in seconds. Default 300. */
  minAgentScheduleIntervalSec?: number
}

export const defaultRoutineLimits: Required<RoutineLimits> = { maxAgentRoutinesPerSquad: 20, minAgentScheduleIntervalSec: 300 }

function hasSecretRef(env: Record<string, EnvBinding>): boolean {
  return Object.values(env).some((b) => typeof b === 'object' && b !== null && b.type === 'secret_ref')
}

export function sameEnv(a: Record<string, EnvBinding>, b: Record<string, EnvBinding>): boolean {
  const ka = Object.keys(a).sort()
  const kb = Object.keys(b).sort()
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && JSON.stringify(a[k]) === JSON.stringify(b[k]))
}

/** An env an Operator wrote (and that holds anything) or one binding a secret: it is for the assignee an Operator chose. */
function operatorBound(env: Record<string, EnvBinding>, writer: EnvWriter): boolean {
  return (writer === 'operator' && Object.keys(env).length > 0) || hasSecretRef(env)
}

/**
 * Refuses (403) an agent key's change of a routine it did not create; with `next`, also a change of
 * an Operator-written env, and a new assignee for an env that is an Operator's or binds a secret.
 */
export function assertAgentMayChange(actor: Actor, current: Routine, next?: { env: Record<string, EnvBinding>; envWrittenBy: EnvWriter; assigneeAgentId: string | null }): void {
  if (actor.type !== 'agent') return
  if (current.createdByAgentId !== actor.agentId) {
    throw new SlawError(
      'forbidden',
      current.createdByAgentId === null
        ? 'An Operator created this routine; only an Operator may change it or its triggers.'
        : 'Another agent created this routine; only that agent or an Operator may change it or its triggers.',
    )
  }
  if (!next) return
  if (!sameEnv(next.env, current.env) && operatorBound(current.env, current.envWrittenBy)) {
    throw new SlawError('forbidden', "An Operator wrote this routine's env; only an Operator may change it.")
  }
  if (next.assigneeAgentId !== current.assigneeAgentId && operatorBound(next.env, next.envWrittenBy)) {
    throw new SlawError('forbidden', "This routine's env was written by an Operator or binds a secret: only an Operator may change its assignee.")
  }
}

/** Refuses (403) an agent key's change of a trigger: only on a routine it created, and not one an Operator added. */
export function assertAgentMayChangeTrigger(actor: Actor, routine: Routine, trigger: RoutineTrigger): void {
  assertAgentMayChange(actor, routine)
  if (actor.type === 'agent' && trigger.createdByAgentId !== actor.agentId) {
    throw new SlawError('forbidden', 'An Operator added this trigger; only an Operator may change it.')
  }
}

/**
 * Whether an agent key may run the routine for `assigneeAgentId` (the run request's override):
 * always for the routine's own assignee; for another one only when the routine is not an
 * Operator's and its env neither is an Operator's nor binds a secret. Undefined when allowed, else
 * the reason.
 */
export function agentMayRunAs(actor: Actor, routine: Routine, assigneeAgentId: string | null | undefined): string | undefined {
  if (actor.type !== 'agent') return undefined
  if (assigneeAgentId === undefined || assigneeAgentId === null || assigneeAgentId === routine.assigneeAgentId) return undefined
  if (routine.createdByAgentId === null) return 'An Operator created this routine; an agent key runs it only for its own assignee.'
  if (operatorBound(routine.env, routine.envWrittenBy)) return "This routine's env was written by an Operator or binds a secret; an agent key runs it only for its own assignee."
  return undefined
}

export const writerOf = (actor: Actor): EnvWriter => (actor.type === 'agent' ? 'agent' : 'operator')

/**
 * Routine quotas from the environment (what `slaw start` reads): SVC_MAX_AGENT_ROUTINES_PER_SQUAD
 * (default 20) and SVC_MIN_AGENT_SCHEDULE_INTERVAL_SEC (default 300). A value that is not a
 * non-negative integer throws.
 */
export function routineLimitsFromEnv(env: Record<string, string | undefined>): RoutineLimits {
  const int = (name: string): number | undefined => {
    const raw = env[name]
    if (raw === undefined || raw.trim() === '') return undefined
    const n = Number(raw)
    if (!Number.isInteger(n) || n < 0) throw new TypeError(`${name} must be an integer of at least 0 (got "${raw}")`)
    return n
  }
  const max = int('SVC_MAX_AGENT_ROUTINES_PER_SQUAD')
  const min = int('SVC_MIN_AGENT_SCHEDULE_INTERVAL_SEC')
  return { ...(max !== undefined ? { maxAgentRoutinesPerSquad: max } : {}), ...(min !== undefined ? { minAgentScheduleIntervalSec: min } : {}) }
}
