import { createHash } from 'node:crypto'
import type { AdapterSession, AdapterWakeContext } from '../../contracts/agent-adapter.js'
import type { StorageSession } from '../../contracts/storage.js'
import type { Agent, HeartbeatRun, Issue } from '../../records.js'

/**
 * CLI sessions (claude_local, codex_local): a session is saved in the agent's runtime state under a
 * key made of the agent, its adapter type, its cwd and its model, and a wake resumes it only when
 * all four still match. Only a run that succeeded saves one; a session the CLI no longer knows is
 * forgotten; `POST /api/agents/{id}/runtime-state/reset-session` forgets them all.
 *
 * runtimeState.sessions: { [key]: { sessionId, adapterType, cwd, model, runId, savedAt } }
 */
interface SessionScope {
  key: string
  adapterType: string
  cwd: string | null
  model: string | null
}

interface SavedSession {
  sessionId: string
  adapterType: string
  cwd: string | null
  model: string | null
  runId: string
  savedAt: string
}

function sessionScope(agent: Pick<Agent, 'id' | 'adapterType' | 'adapterConfig'>): SessionScope {
  const cwd = typeof agent.adapterConfig.cwd === 'string' ? agent.adapterConfig.cwd : null
  const model = typeof agent.adapterConfig.model === 'string' && agent.adapterConfig.model ? agent.adapterConfig.model : null
  const key = createHash('sha256')
    .update(JSON.stringify([agent.id, agent.adapterType, cwd, model]))
    .digest('hex')
    .slice(0, 32)
  return { key, adapterType: agent.adapterType, cwd, model }
}

function sessionsOf(agent: Pick<Agent, 'runtimeState'>): Record<string, SavedSession> {
  const s = agent.runtimeState.sessions
  return s && typeof s === 'object' && !Array.isArray(s) ? (s as Record<string, SavedSession>) : {}
}

/** The session saved for the agent's current adapter type, cwd and model, or null. */
export function savedSession(agent: Pick<Agent, 'id' | 'adapterType' | 'adapterConfig' | 'runtimeState'>): AdapterSession | null {
  const scope = sessionScope(agent)
  const saved = sessionsOf(agent)[scope.key]
  // The key already covers all four; the stored fields are checked too, so a hand-edited state cannot cross them.
  if (!saved || typeof saved.sessionId !== 'string' || !saved.sessionId) return null
  if (saved.adapterType !== scope.adapterType || saved.cwd !== scope.cwd || saved.model !== scope.model) return null
  return { id: saved.sessionId, key: scope.key }
}

/**
 * After a run: saves the session a succeeded run ended in, or forgets the one the CLI did not find
 * (`session: null`). Anything else leaves the saved session as it is.
 */
export async function settleSession(tx: StorageSession, run: HeartbeatRun, session: AdapterSession | null | undefined, resumedId: string | null, now: Date): Promise<void> {
  if (session === undefined) return
  if (session !== null && run.status !== 'succeeded') return
  const agent = await tx.agents.get(run.agentId)
  if (!agent) return
  const scope = sessionScope(agent)
  if (session === null) {
    // Forget only the session this run was told to resume: a newer one saved meanwhile stays.
    if (tx.agents.setSession) return tx.agents.setSession(agent.id, scope.key, null, resumedId ?? undefined)
    const sessions = { ...sessionsOf(agent) }
    if (!sessions[scope.key] || (resumedId !== null && sessions[scope.key]!.sessionId !== resumedId)) return
    delete sessions[scope.key]
    await tx.agents.update(agent.id, { runtimeState: { ...agent.runtimeState, sessions } })
    return
  }
  // A reset-session while the run was running wins: its session is not saved behind the reset.
  if (run.startedAt && (await resetSince(tx, run, run.startedAt))) return
  const saved: SavedSession = { sessionId: session.id, adapterType: scope.adapterType, cwd: scope.cwd, model: scope.model, runId: run.id, savedAt: now.toISOString() }
  if (tx.agents.setSession) return tx.agents.setSession(agent.id, scope.key, { ...saved })
  await tx.agents.update(agent.id, { runtimeState: { ...agent.runtimeState, sessions: { ...sessionsOf(agent), [scope.key]: saved } } })
}

/** Whether the agent's sessions were reset (activity `agent.session_reset`) at or after `since`. */
async function resetSince(tx: StorageSession, run: HeartbeatRun, since: Date): Promise<boolean> {
  const recent = await tx.activity.list({ squadId: run.squadId, entityType: 'agent', entityId: run.agentId, limit: 50 })
  return recent.some((a) => a.action === 'agent.session_reset' && a.createdAt.getTime() >= since.getTime())
}

/** What a wake is about, for adapters that write the agent's prompt: its issue, the comment that woke it, the agent's prompt. */
export async function wakeContext(tx: StorageSession, run: HeartbeatRun, agent: Agent, issue: Issue | null): Promise<AdapterWakeContext> {
  const context: AdapterWakeContext = { agentPrompt: agent.prompt, agentName: agent.name, issue: null, comment: null }
  if (issue) context.issue = { id: issue.id, identifier: issue.identifier, title: issue.title, description: issue.description, status: issue.status }
  if (issue && run.commentId) {
    const comment = await tx.comments.get(issue.id, run.commentId)
    if (comment) {
      const author = comment.authorType === 'agent' ? ((await tx.agents.get(comment.authorId))?.name ?? 'an agent') : 'the Operator'
      context.comment = { id: comment.id, body: comment.body, authorName: author }
    }
  }
  return context
}
