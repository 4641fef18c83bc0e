import type { ResyncEvent, SquadEvent } from '@slaw/client'

/**
 * Which cached queries an event makes stale. Query keys start with the thing they read
 * (`['squad', id, 'issues', …]`, `['issue', id, …]`), so a prefix here refreshes every view of it.
 * Pages never poll: the event stream is the only reason to refetch.
 */
export type QueryKeyPrefix = readonly unknown[]

export function staleKeysFor(event: SquadEvent | ResyncEvent): QueryKeyPrefix[] {
  if (event.type === 'resync') return [[]] // events were missed: refetch everything shown
  const squad = event.squadId
  const keys: QueryKeyPrefix[] = [['squad', squad, 'activity']]
  const area = event.type.split('.')[0]
  switch (area) {
    case 'issue':
      keys.push(['squad', squad, 'issues'], ['squad', squad, 'dashboard'], ['squad', squad, 'agents-extra'])
      if (event.issueId) keys.push(['issue', event.issueId])
      break
    case 'approval':
      keys.push(['squad', squad, 'approvals'], ['squad', squad, 'dashboard'], ['approval'])
      break
    case 'run':
      if (event.type === 'run.output') return [] // appended to the run's output, nothing to refetch
      keys.push(['squad', squad, 'runs'], ['squad', squad, 'dashboard'], ['squad', squad, 'agents'], ['squad', squad, 'agents-extra'])
      if (event.runId) keys.push(['run', event.runId])
      if (event.agentId) keys.push(['agent', event.agentId])
      if (event.issueId) keys.push(['issue', event.issueId])
      break
    case 'cost':
    case 'budget':
      keys.push(['squad', squad, 'costs'], ['squad', squad, 'budgets'], ['squad', squad, 'dashboard'], ['squad', squad, 'agents-extra'])
      if (event.runId) keys.push(['run', event.runId])
      if (event.agentId) keys.push(['agent', event.agentId])
      break
    case 'agent':
      keys.push(['squad', squad, 'agents'], ['squad', squad, 'dashboard'], ['squad', squad, 'budgets'])
      if (event.agentId) keys.push(['agent', event.agentId])
      keys.push(['agent', event.entityId])
      break
    case 'routine':
      keys.push(['squad', squad, 'routines'], ['routine', event.entityId])
      break
    case 'squad':
      // Any squad made or renamed (Operator streams hear of every squad's): the switcher's list.
      keys.push(['squads'])
      break
  }
  return keys
}

/**
 * Gathers stale keys for a short while and hands them over once, deduplicated: a burst of events
 * (a run finishing writes several) becomes one refetch per view instead of one per event, still
 * well within a second.
 */
export function createBatcher(flush: (keys: QueryKeyPrefix[]) => void, delayMs = 120) {
  let pending = new Map<string, QueryKeyPrefix>()
  let timer: ReturnType<typeof setTimeout> | null = null
  return {
    add(keys: QueryKeyPrefix[]) {
      for (const k of keys) pending.set(JSON.stringify(k), k)
      if (!timer && pending.size) {
        timer = setTimeout(() => {
          timer = null
          const batch = [...pending.values()]
          pending = new Map()
          flush(batch)
        }, delayMs)
      }
    },
    cancel() {
      if (timer) clearTimeout(timer)
      timer = null
      pending = new Map()
    },
  }
}

export interface OutputChunk {
  key: string
  stream: 'stdout' | 'stderr'
  text: string
  offset: number
}

/**
 * A run's output as it streams in: chunks from the stored output (GET …/output) and from
 * `run.output` events may overlap and arrive out of order (the stored read can answer after the
 * first events), so each is kept once by (stream, offset) and placed before any later chunk of
 * its stream.
 */
export function mergeChunks(existing: readonly OutputChunk[], incoming: readonly OutputChunk[]): OutputChunk[] {
  const seen = new Set(existing.map((c) => `${c.stream}:${c.offset}`))
  let out: OutputChunk[] | null = null
  for (const c of incoming) {
    const k = `${c.stream}:${c.offset}`
    if (seen.has(k)) continue
    seen.add(k)
    out ??= [...existing]
    const later = out.findIndex((x) => x.stream === c.stream && x.offset > c.offset)
    if (later < 0) out.push(c)
    else out.splice(later, 0, c)
  }
  return out ?? (existing as OutputChunk[])
}

/** Keeps the last `limit` characters of output so a chatty run cannot grow the page forever. */
export function capOutput(chunks: OutputChunk[], limit = 200_000): OutputChunk[] {
  let total = 0
  for (let i = chunks.length - 1; i >= 0; i--) {
    total += chunks[i]!.text.length
    if (total > limit) return chunks.slice(i + 1)
  }
  return chunks
}
