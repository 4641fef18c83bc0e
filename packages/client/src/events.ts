// SSE is parsed with eventsource-parser: the event-stream grammar has corners a split on blank
// lines gets wrong (CR, LF and CRLF line ends, a BOM, multi-line data, comments, `retry:`, and
// chunks that end anywhere, even inside a field), and it is a small, dependency-free parser that
// is widely used and kept up to date, working on any stream of text (fetch in Node and browsers).
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import type { components } from './generated/openapi.js'

type Schemas = components['schemas']
/** One change of a squad: a union discriminated by `type` (docs/events.md). */
export type SquadEvent = Schemas['SquadEvent']
export type SquadEventType = SquadEvent['type']
/** The event of one type, e.g. `SquadEventOf<'run.output'>`. */
export type SquadEventOf<T extends SquadEventType> = Extract<SquadEvent, { type: T }>
/**
 * The stream could not resume where asked (Last-Event-ID older than the retention, or unknown):
 * events were missed. Refetch what you show, then keep reading; the stream goes on from now.
 */
export type ResyncEvent = Schemas['ResyncEvent']
type ApiErrorBody = Schemas['ErrorBody']

export interface EventsOptions {
  /** Event types or `area.*` patterns, e.g. `['issue.*', 'run.finished']`; default all. */
  types?: Array<SquadEventType | `${'issue' | 'approval' | 'run' | 'cost' | 'agent' | 'budget' | 'routine' | 'squad'}.*`>
  /** Only events of this issue. */
  issueId?: string
  /** Only events of this agent. */
  agentId?: string
  /** Start after this event (a stored `id`), e.g. where a previous iterator stopped. */
  lastEventId?: string
  /** Stops the iterator (and closes the connection). */
  signal?: AbortSignal
  /** Wait before reconnecting after a dropped connection, unless the server says otherwise. Default 1 s. */
  reconnectDelayMs?: number
}

/** The server refused the stream (bad filter, unknown squad, wrong key): reconnecting would not help. */
export class EventStreamError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody | null,
  ) {
    super(body ? `${status} ${body.code}: ${body.error}` : `event stream answered ${status}`)
    this.name = 'EventStreamError'
  }
}

export interface EventConnection {
  baseUrl: string
  headers: Record<string, string>
  fetch: (input: Request) => Promise<Response>
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })

/**
 * The events of a squad, reconnecting by itself: after a dropped connection, a server restart or a
 * `cutoff` (the client read too slowly), it connects again with `Last-Event-ID` set to the last
 * event it yielded, so nothing is missed or repeated within the server's retention. 401, 403, 404
 * and 400 end the iterator with an `EventStreamError`; 429 and 5xx are retried.
 */
export async function* streamEvents(conn: EventConnection, squadId: string, options: EventsOptions = {}): AsyncGenerator<SquadEvent | ResyncEvent> {
  const { signal } = options
  let last = options.lastEventId
  const baseDelay = options.reconnectDelayMs ?? 1000
  let delay = baseDelay
  const url = new URL(`${conn.baseUrl}/api/squads/${encodeURIComponent(squadId)}/events`)
  if (options.types?.length) url.searchParams.set('types', options.types.join(','))
  if (options.issueId) url.searchParams.set('issueId', options.issueId)
  if (options.agentId) url.searchParams.set('agentId', options.agentId)

  while (!signal?.aborted) {
    const headers: Record<string, string> = { ...conn.headers, accept: 'text/event-stream' }
    if (last) headers['last-event-id'] = last
    let res: Response
    try {
      res = await conn.fetch(new Request(url, { headers, ...(signal ? { signal } : {}) }))
    } catch {
      if (signal?.aborted) return
      await sleep(delay, signal)
      continue
    }
    if (!res.ok || !res.body) {
      const body = (await res.json().catch(() => null)) as ApiErrorBody | null
      if (res.status !== 429 && res.status < 500) throw new EventStreamError(res.status, body)
      await sleep(Math.max(delay, baseDelay), signal)
      continue
    }
    delay = baseDelay
    const pending: EventSourceMessage[] = []
    const parser = createParser({
      onEvent: (message) => {
        pending.push(message)
      },
      onRetry: (ms) => {
        delay = ms
      },
    })
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        parser.feed(value)
        while (pending.length) {
          const message = pending.shift()!
          const data = JSON.parse(message.data) as Record<string, unknown>
          if (message.event === 'cutoff') {
            // The server ends this stream; it says where to resume and when.
            if (typeof data.lastEventId === 'string' && data.lastEventId) last = data.lastEventId
            if (typeof data.retryAfterMs === 'number') delay = data.retryAfterMs
            continue
          }
          if (message.event === 'resync') {
            if (typeof data.lastEventId === 'string' && data.lastEventId) last = data.lastEventId
            yield data as ResyncEvent
            continue
          }
          if (message.id) last = message.id
          yield data as SquadEvent
        }
      }
    } catch {
      // A dropped connection: reconnect below (unless stopped).
    } finally {
      await reader.cancel().catch(() => undefined)
    }
    if (signal?.aborted) return
    await sleep(delay, signal)
  }
}
