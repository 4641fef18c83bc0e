import { SlawError, notFound } from '../../errors.js'
import { isUuid } from './ids.js'

import type { Actor } from '../../contracts/actor.js'

export type { Actor }

export const systemActor = (id = 'slaw'): Actor => ({ type: 'system', id })
export const operatorActor = (keyId: string | null = null): Actor => ({ type: 'operator', keyId })

/** Operator keys and the system itself may do anything. */
export function isPrivileged(actor: Actor): boolean {
  return actor.type === 'operator' || actor.type === 'system'
}

export function requireOperator(actor: Actor): void {
  if (!isPrivileged(actor)) throw new SlawError('forbidden', 'This endpoint needs an Operator key.')
}

/**
 * An agent key sees only its own squad; anything else answers 404, never 403, so ids do not leak.
 */
export function assertSquadVisible(actor: Actor, squadId: string, what = 'Resource'): void {
  if (actor.type === 'agent' && actor.squadId !== squadId) throw notFound(what)
}

/**
 * A squad's record by id, when the actor may see it; 404 `<what> not found` otherwise: an id that is
 * not a UUID names nothing (and never reaches SQL), and another squad's record is as unknown to an
 * agent key as a missing one.
 */
export async function visibleById<T extends { squadId: string }>(actor: Actor, id: string, what: string, read: (id: string) => Promise<T | undefined>): Promise<T> {
  const record = isUuid(id) ? await read(id) : undefined
  if (!record) throw notFound(what)
  assertSquadVisible(actor, record.squadId, what)
  return record
}

/** Activity columns for an actor. */
export function actorColumns(actor: Actor): { actorType: 'agent' | 'user' | 'system'; actorId: string; agentId: string | null; runId: string | null } {
  switch (actor.type) {
    case 'agent':
      return { actorType: 'agent', actorId: actor.agentId, agentId: actor.agentId, runId: actor.runId }
    case 'operator':
      return { actorType: 'user', actorId: actor.keyId ? `operator:${actor.keyId}` : 'operator', agentId: null, runId: null }
    case 'system':
      return { actorType: 'system', actorId: actor.id, agentId: null, runId: null }
  }
}
