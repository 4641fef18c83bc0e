import { invalid } from '../../errors.js'

/**
 * A record that a payload names (an issue's goal, a routine's assignee, a cost's agent …) must belong
 * to the squad being written. A missing record and another squad's answer the same 400 on the field
 * that named it, so a payload never learns whether another squad's id exists. Returns the record.
 *
 * ```ts
 * const goal = inSquad(await tx.goals.get(id), squadId, '/goalId', 'goalId must be a goal of this squad')
 * ```
 */
export function inSquad<T extends { readonly squadId: string }>(record: T | null | undefined, squadId: string, at: string, message: string): T {
  if (!record || record.squadId !== squadId) throw invalid(at, message)
  return record
}
