import type { StorageSession } from '../../contracts/storage.js'
import type { Actor } from '../foundation/actor.js'
import type { Issue } from '../../records.js'
import { queueWake } from './wakes.js'

/**
 * The events that wake agents, each written in the transaction of the change that causes it
 * (docs/heartbeats.md, "Wake reasons"). Each helper decides whether the event wakes anyone and
 * returns how many wakes it queued, so the caller knows to kick the job runner after its commit.
 */

/** An issue got an agent assignee (create or PATCH): that agent is woken for it. */
/** The cause of an assignment wake when it is more than an assignment (a routine run's issue). */
export interface AssignmentWake {
  reason: 'routine'
  routineRunId: string
}

export async function wakeOnAssignment(tx: StorageSession, actor: Actor, issue: Issue, cause?: AssignmentWake): Promise<number> {
  if (!issue.assigneeAgentId) return 0
  // An agent assigning work to itself is already awake (a routine's issue is new work all the same).
  if (!cause && actor.type === 'agent' && actor.agentId === issue.assigneeAgentId) return 0
  if (issue.status === 'done' || issue.status === 'cancelled') return 0
  await queueWake(tx, { squadId: issue.squadId, agentId: issue.assigneeAgentId, issueId: issue.id, reason: cause?.reason ?? 'assignment', routineRunId: cause?.routineRunId ?? null })
  return 1
}

/**
 * Mentions in a comment body: `@name` (letters, digits, `_`, `-`, `.`) or `@[Full Name]` for a
 * name with spaces, matched case-insensitively against the squad's agents. The author is not
 * woken by its own mention; terminated agents never are.
 */
function mentionedNames(body: string): string[] {
  const names = new Set<string>()
  const pattern = /@\[([^\]\n]{1,100})\]|(?<![\w@])@([A-Za-z0-9][\w.-]{0,99})/g
  for (const m of body.matchAll(pattern)) {
    const name = (m[1] ?? m[2] ?? '').trim().replace(/[.-]+$/, '')
    if (name) names.add(name)
    if (names.size >= 20) break
  }
  return [...names]
}

export async function wakeOnMentions(tx: StorageSession, actor: Actor, issue: Issue, commentId: string, body: string): Promise<number> {
  const names = mentionedNames(body)
  if (!names.length) return 0
  const agents = await tx.agents.findByNames(issue.squadId, names)
  let queued = 0
  for (const agent of agents) {
    if (agent.status === 'terminated') continue
    if (actor.type === 'agent' && actor.agentId === agent.id) continue
    await queueWake(tx, { squadId: issue.squadId, agentId: agent.id, issueId: issue.id, reason: 'mention', commentId })
    queued++
  }
  return queued
}

/**
 * An issue reached done or cancelled: when it has a parent whose children are now all finished,
 * the parent's assignee is woken to pick the work up again.
 */
export async function wakeOnChildrenDone(tx: StorageSession, issue: Issue): Promise<number> {
  if (!issue.parentId || (issue.status !== 'done' && issue.status !== 'cancelled')) return 0
  const parent = await tx.issues.get(issue.parentId)
  if (!parent?.assigneeAgentId || parent.status === 'done' || parent.status === 'cancelled') return 0
  if ((await tx.issues.openChildren(parent.id)) > 0) return 0
  await queueWake(tx, { squadId: parent.squadId, agentId: parent.assigneeAgentId, issueId: parent.id, reason: 'children_done' })
  return 1
}
