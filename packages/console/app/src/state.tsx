import { EventStreamError } from '@slaw/client'
import { useQueryClient } from '@tanstack/react-query'
import { createContext, useContext, useEffect, useState, useSyncExternalStore, type ReactNode } from 'react'
import { createConsoleClient, type ConsoleClient } from './lib/api'
import { capOutput, createBatcher, mergeChunks, staleKeysFor, type OutputChunk } from './lib/live'

const ClientContext = createContext<ConsoleClient | null>(null)

export function ClientProvider({ client, children }: { client: ConsoleClient; children: ReactNode }) {
  return <ClientContext.Provider value={client}>{children}</ClientContext.Provider>
}

export function useApi(): ConsoleClient {
  const client = useContext(ClientContext)
  if (!client) throw new Error('useApi outside ClientProvider')
  return client
}

/** Live run output by run id, fed by the stored output and by `run.output` events. */
class OutputStore {
  private runs = new Map<string, OutputChunk[]>()
  private listeners = new Set<() => void>()
  private static empty: OutputChunk[] = []
  subscribe = (fn: () => void) => {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }
  get(runId: string): OutputChunk[] {
    return this.runs.get(runId) ?? OutputStore.empty
  }
  add(runId: string, chunks: OutputChunk[]): void {
    const before = this.get(runId)
    const after = capOutput(mergeChunks(before, chunks))
    if (after === before) return
    this.runs.set(runId, after)
    for (const fn of this.listeners) fn()
  }
}
export const outputStore = new OutputStore()

export function useRunOutput(runId: string): OutputChunk[] {
  return useSyncExternalStore(outputStore.subscribe, () => outputStore.get(runId))
}

export type LiveState = 'connecting' | 'live' | 'offline'
const LiveContext = createContext<LiveState>('connecting')
export const useLiveState = () => useContext(LiveContext)

/**
 * Reads the squad's event stream for as long as the squad is shown: each event marks the queries it
 * touches stale (batched), and run output is appended as it comes. The client reconnects by itself
 * with Last-Event-ID; a `resync` (events missed) refetches everything.
 */
export function LiveEvents({ squadId, children }: { squadId: string; children: ReactNode }) {
  const queryClient = useQueryClient()
  const [state, setState] = useState<LiveState>('connecting')
  useEffect(() => {
    const controller = new AbortController()
    const batch = createBatcher((keys) => {
      for (const queryKey of keys) void queryClient.invalidateQueries({ queryKey: [...queryKey] })
    })
    setState('connecting')
    // A client of its own for the stream, to know when the connection is answered (live) or lost.
    let answered = false
    const stream = createConsoleClient(window.location.origin, async (req) => {
      try {
        const res = await fetch(req)
        setState(res.ok ? 'live' : 'offline')
        // A resumed stream replays this squad's events only: squads made meanwhile are read again.
        if (res.ok && answered) batch.add([['squads']])
        answered ||= res.ok
        return res
      } catch (err) {
        setState('offline')
        throw err
      }
    })
    void (async () => {
      try {
        for await (const event of stream.events(squadId, { signal: controller.signal })) {
          if (event.type === 'run.output' && event.runId) {
            const d = event.data
            outputStore.add(event.runId, [{ key: `${d.stream}:${d.offset}`, stream: d.stream, text: d.text, offset: d.offset }])
            continue
          }
          batch.add(staleKeysFor(event))
        }
      } catch (err) {
        if (controller.signal.aborted) return
        setState('offline')
        // A refused stream (the session ended) sends the app back to its session check.
        if (err instanceof EventStreamError && err.status === 401) void queryClient.invalidateQueries({ queryKey: ['session'] })
      }
    })()
    return () => {
      controller.abort()
      batch.cancel()
    }
  }, [queryClient, squadId])
  return <LiveContext.Provider value={state}>{children}</LiveContext.Provider>
}
