import type { Approval, BudgetOverview, HeartbeatRun, IssueSummary } from '@slaw/client'
import { describe, expect, it } from 'vitest'
import { needsAttention } from '../src/lib/attention'

const run = (over: Partial<HeartbeatRun>): HeartbeatRun => ({ id: 'r1', agentId: 'a1', reason: 'assignment', status: 'failed', error: null, errorCode: null, exitCode: null, ...over }) as HeartbeatRun
const names: Record<string, string> = { a1: 'ada', a2: 'bob' }
const agentName = (id: string) => names[id] ?? '?'

describe('needs attention', () => {
  it('gives each item its reason, worst first', () => {
    const budgets = {
      squadId: 'S',
      squad: { budgetMonthlyCents: 1000, spentMonthlyCents: 1200, percentUsed: 120 },
      agents: [],
      projects: [],
      incidents: [{ id: 'inc', scopeType: 'agent', scopeId: 'a2', metric: 'cents', level: 'hard', period: '2026-01', limitAmount: 500, observedAmount: 510, createdAt: '' }],
    } as unknown as BudgetOverview
    const items = needsAttention({
      failedRuns: [run({ error: 'adapter crashed', errorCode: 'adapter_failed' }), run({ id: 'r2', status: 'timed_out', exitCode: 137 })],
      blockedIssues: [{ id: 'i1', identifier: 'SQ-1', title: 'Ship it', status: 'blocked', priority: 'high', assigneeAgentId: null } as IssueSummary],
      pendingApprovals: [{ id: 'ap', type: 'request_board_approval', payload: { title: 'Spend more' }, requestedByAgentId: 'a1' } as unknown as Approval],
      budgets,
      agentName,
    })
    expect(items.map((i) => i.kind)).toEqual(['budget', 'run', 'run', 'approval', 'issue'])
    expect(items[0]).toMatchObject({ title: 'Budget exceeded: bob', target: { kind: 'agent', id: 'a2' } })
    expect(items[0]!.reason).toContain('$5.10 of $5.00')
    expect(items[1]!.reason).toBe('Failed (adapter_failed): adapter crashed')
    expect(items[2]!.reason).toBe('Timed out: exit code 137')
    expect(items[3]).toMatchObject({ title: 'Spend more', reason: 'Waiting for a decision (asked by ada)' })
    expect(items[4]).toMatchObject({ title: 'SQ-1 Ship it', reason: 'Blocked and unassigned' })
  })
  it('is empty when nothing is wrong', () => {
    expect(needsAttention({ failedRuns: [], blockedIssues: [], pendingApprovals: [], budgets: undefined, agentName })).toEqual([])
  })
})
