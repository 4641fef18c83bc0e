import type { SquadEvent } from '@slaw/client'
import { describe, expect, it, vi } from 'vitest'
import { capOutput, createBatcher, mergeChunks, staleKeysFor, type OutputChunk } from '../src/lib/live'

const base = { id: '1', squadId: 'S', at: '2026-01-01T00:00:00Z', action: 'x', entityType: 'issue', entityId: 'I', actorType: 'user', actorId: 'op', agentId: null as string | null, runId: null as string | null, issueId: null as string | null, data: {} }
const ev = (type: string, extra: Partial<typeof base> = {}) => ({ ...base, type, ...extra }) as unknown as SquadEvent

describe('which views an event makes stale', () => {
  it('an issue event refreshes the squad lists and that issue', () => {
    const keys = staleKeysFor(ev('issue.created', { issueId: 'I' }))
    expect(keys).toContainEqual(['squad', 'S', 'issues'])
    expect(keys).toContainEqual(['squad', 'S', 'dashboard'])
    expect(keys).toContainEqual(['issue', 'I'])
    expect(keys).not.toContainEqual(['squad', 'S', 'approvals'])
  })
  it('an approval event refreshes the inbox and the overview', () => {
    const keys = staleKeysFor(ev('approval.created', { entityType: 'approval' }))
    expect(keys).toContainEqual(['squad', 'S', 'approvals'])
    expect(keys).toContainEqual(['squad', 'S', 'dashboard'])
  })
  it('run events refresh runs, the run, its agent and issue; output refreshes nothing', () => {
    const keys = staleKeysFor(ev('run.finished', { runId: 'R', agentId: 'A', issueId: 'I' }))
    for (const k of [['squad', 'S', 'runs'], ['run', 'R'], ['agent', 'A'], ['issue', 'I'], ['squad', 'S', 'agents']]) expect(keys).toContainEqual(k)
    expect(staleKeysFor(ev('run.output', { runId: 'R' }))).toEqual([])
  })
  it('cost and budget events refresh costs and budgets', () => {
    const keys = staleKeysFor(ev('budget.warning'))
    expect(keys).toContainEqual(['squad', 'S', 'budgets'])
    expect(keys).toContainEqual(['squad', 'S', 'costs'])
  })
  it("a squad made or renamed (any squad's, on an Operator stream) refreshes the switcher's list", () => {
    const keys = staleKeysFor(ev('squad.created', { squadId: 'NEW', entityType: 'squad', entityId: 'NEW' }))
    expect(keys).toContainEqual(['squads'])
    expect(keys).not.toContainEqual(['squad', 'S', 'issues'])
    expect(staleKeysFor(ev('squad.updated', { entityType: 'squad' }))).toContainEqual(['squads'])
  })
  it('a resync refreshes everything', () => {
    expect(staleKeysFor({ type: 'resync', lastEventId: '9' } as never)).toEqual([[]])
  })
})

describe('the batcher', () => {
  it('hands over each key once per burst', () => {
    vi.useFakeTimers()
    const flushed: unknown[][] = []
    const b = createBatcher((keys) => flushed.push(keys), 100)
    b.add([['a'], ['b']])
    b.add([['a'], ['c']])
    expect(flushed).toEqual([])
    vi.advanceTimersByTime(100)
    expect(flushed).toEqual([[['a'], ['b'], ['c']]])
    b.add([['d']])
    b.cancel()
    vi.advanceTimersByTime(200)
    expect(flushed.length).toBe(1)
    vi.useRealTimers()
  })
})

const chunk = (stream: 'stdout' | 'stderr', offset: number, text: string): OutputChunk => ({ key: `${stream}:${offset}`, stream, offset, text })

describe('run output merging', () => {
  it('keeps each chunk once and in offset order per stream', () => {
    // Live events came first; the stored read answers after with older and overlapping chunks.
    const live = [chunk('stdout', 10, 'world\n'), chunk('stdout', 16, '!\n')]
    const merged = mergeChunks(live, [chunk('stdout', 0, 'hello '), chunk('stdout', 6, 'big '), chunk('stdout', 10, 'world\n')])
    expect(merged.map((c) => c.text).join('')).toBe('hello big world\n!\n')
    expect(mergeChunks(merged, [chunk('stdout', 16, '!\n')])).toBe(merged)
    const both = mergeChunks(merged, [chunk('stderr', 0, 'warn\n')])
    expect(both.length).toBe(5)
  })
  it('caps the kept output to the most recent characters', () => {
    const chunks = [chunk('stdout', 0, 'a'.repeat(60)), chunk('stdout', 60, 'b'.repeat(60)), chunk('stdout', 120, 'c'.repeat(60))]
    expect(capOutput(chunks, 130).map((c) => c.text[0])).toEqual(['b', 'c'])
    expect(capOutput(chunks, 1000)).toBe(chunks)
  })
})
