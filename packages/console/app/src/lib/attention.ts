import type { Approval, BudgetOverview, HeartbeatRun, IssueSummary } from '@slaw/client'
import { money, words } from './format'

/** One thing an operator should look at, with the reason in words and where to go. */
export interface AttentionItem {
  kind: 'run' | 'issue' | 'approval' | 'budget'
  id: string
  title: string
  reason: string
  /** Higher first: failures and hard budget stops before pending decisions. */
  weight: number
  target: { kind: 'run' | 'issue' | 'approval' | 'agent' | 'costs'; id: string }
}

export interface AttentionInput {
  failedRuns: HeartbeatRun[]
  blockedIssues: IssueSummary[]
  pendingApprovals: Approval[]
  budgets: BudgetOverview | undefined
  agentName: (id: string) => string
}

export function needsAttention(input: AttentionInput): AttentionItem[] {
  const items: AttentionItem[] = []
  for (const run of input.failedRuns) {
    const what = run.status === 'timed_out' ? 'Timed out' : 'Failed'
    const detail = run.error ?? (run.exitCode !== null ? `exit code ${run.exitCode}` : 'no error message')
    items.push({
      kind: 'run',
      id: run.id,
      title: `${input.agentName(run.agentId)}: run ${words(run.reason)}`,
      reason: `${what}${run.errorCode ? ` (${run.errorCode})` : ''}: ${detail}`,
      weight: 40,
      target: { kind: 'run', id: run.id },
    })
  }
  for (const issue of input.blockedIssues) {
    items.push({
      kind: 'issue',
      id: issue.id,
      title: `${issue.identifier} ${issue.title}`,
      reason: issue.assigneeAgentId ? `Blocked; assigned to ${input.agentName(issue.assigneeAgentId)}` : 'Blocked and unassigned',
      weight: 20,
      target: { kind: 'issue', id: issue.id },
    })
  }
  for (const approval of input.pendingApprovals) {
    const title = typeof approval.payload.title === 'string' ? approval.payload.title : words(approval.type)
    items.push({
      kind: 'approval',
      id: approval.id,
      title,
      reason: `Waiting for a decision${approval.requestedByAgentId ? ` (asked by ${input.agentName(approval.requestedByAgentId)})` : ''}`,
      weight: 30,
      target: { kind: 'approval', id: approval.id },
    })
  }
  const b = input.budgets
  if (b) {
    for (const incident of b.incidents) {
      const scope = incident.scopeType === 'agent' ? input.agentName(incident.scopeId) : words(incident.scopeType)
      const amount = incident.metric === 'tokens' ? `${incident.observedAmount} of ${incident.limitAmount} tokens` : `${money(incident.observedAmount)} of ${money(incident.limitAmount)}`
      items.push({
        kind: 'budget',
        id: incident.id,
        title: `Budget ${incident.level === 'hard' ? 'exceeded' : 'warning'}: ${scope}`,
        reason: `${amount} spent (${incident.metric}, period ${incident.period})`,
        weight: incident.level === 'hard' ? 50 : 35,
        target: incident.scopeType === 'agent' ? { kind: 'agent', id: incident.scopeId } : { kind: 'costs', id: b.squadId },
      })
    }
  }
  // Stable order: weight, then the order the API gave (newest first within a kind).
  return items.map((item, i) => ({ item, i })).sort((a, b) => b.item.weight - a.item.weight || a.i - b.i).map(({ item }) => item)
}
