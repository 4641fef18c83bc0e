import { useQuery } from '@tanstack/react-query'
import { useEffect, useRef } from 'react'
import { unwrap } from '../lib/api'
import { outputStore, useApi, useRunOutput } from '../state'

/**
 * A run's output: what the server kept so far (GET …/output), then every `run.output` event as it
 * arrives (the squad's stream feeds the same store). Overlapping chunks are kept once.
 */
export function LiveOutput({ runId, compact = false, finishedTail }: { runId: string; compact?: boolean; finishedTail?: string | null }) {
  const api = useApi()
  const stored = useQuery({
    queryKey: ['run', runId, 'output'],
    queryFn: async () => {
      const out = unwrap(await api.GET('/api/heartbeat-runs/{runId}/output', { params: { path: { runId }, query: { limit: 500 } } }))
      outputStore.add(
        runId,
        out.chunks.map((c) => ({ key: `${c.stream}:${c.offset}`, stream: c.stream, text: c.text, offset: c.offset })),
      )
      return out
    },
  })
  const chunks = useRunOutput(runId)
  const pre = useRef<HTMLPreElement>(null)
  const text = chunks.map((c) => c.text).join('')
  const shown = compact ? text.split('\n').slice(-8).join('\n') : text
  // Follow the end while the reader is already at the end.
  useEffect(() => {
    const el = pre.current
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight
  }, [shown])
  const fallback = !text && (finishedTail ?? stored.data?.outputTail)
  return (
    <pre ref={pre} className={compact ? 'output compact' : 'output'} aria-label="Run output" aria-live={compact ? 'off' : 'polite'} tabIndex={0}>
      {chunks.length
        ? compact
          ? shown
          : chunks.map((c) => (
              <span key={c.key} className={c.stream === 'stderr' ? 'stderr' : undefined}>
                {c.text}
              </span>
            ))
        : fallback || (stored.isPending ? 'Loading output…' : stored.error ? 'The output could not be read.' : 'No output yet.')}
    </pre>
  )
}
