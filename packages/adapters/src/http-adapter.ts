import { request as httpRequest, type ClientRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP } from 'node:net'
import { Type, defineAgentAdapter, type AdapterConfig, type AdapterWakeInput, type AdapterWakeResult, type AgentAdapter, type ErrorDetail } from '@slaw/core'
import { isRecord, timerMs } from './config-checks.js'
import { OutputTail, defaultOutputTailBytes } from './output-tail.js'
import { signatureHeader, wakeSignature } from './signature.js'
import { EgressRefusedError, classifyAddress, egressRefusal, guardedLookup, type EgressPolicy } from './egress.js'

export interface HttpAdapterOptions {
  /**
   * How long the agent's endpoint has to answer the wake (connect, headers and body), in ms.
   * Default 30 s. It is only an acknowledgement: the agent then works on its own and finishes the
   * run by reporting `final: true`. When the run's own timeout is shorter, that one applies (`timed_out`).
   */
  requestTimeoutMs?: number
  /** How much of the endpoint's answer is kept as the run's output: the last N bytes. Default 64 KiB. */
  outputTailBytes?: number
  /**
   * Which addresses a wake may connect to, checked on the resolved address: link-local (cloud
   * metadata) refused by default; loopback and private networks allowed by default.
   */
  egress?: EgressPolicy
  /** Where warnings go (a wake over plain http to another host). Default: `process.emitWarning`. */
  warn?: (message: string) => void
}

/** The most of a non-2xx answer kept as output: its first line, scrubbed, clipped to this. */
const failedAnswerChars = 200

const urlMessage = 'an http agent needs a url starting with http:// or https://'

/**
 * The agent config of an `http` agent (docs/adapters.md; adapterConfig in docs/heartbeats.md). Which
 * header names are allowed (valid, not owned by the adapter) is `validateConfig`'s: a schema cannot say it.
 */
export const httpConfigSchema = Type.Object({
  url: Type.String({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', errorMessage: urlMessage }),
  headers: Type.Record(Type.String(), Type.String({ pattern: '^[^\\r\\n\\0]*$', errorMessage: 'a header value must be a string without line breaks' }), {
    default: {},
    errorMessage: 'headers must be an object of name: string value',
  }),
})

/** The agent config of an `http` agent, as its wake sees it (`headers` defaults to `{}`). */
export type HttpAgentConfig = AdapterConfig<typeof httpConfigSchema>

/** The JSON body POSTed to an http agent. `env` is exactly the agent's wake environment. */
export interface HttpWakeBody {
  runId: string
  agentId: string
  squadId: string
  issueId: string | null
  reason: string
  /** When the wake was sent (ISO 8601), so a receiver can refuse old replays. */
  sentAt: string
  env: Record<string, string>
}

/** Headers an agent config may not set: the adapter owns them. */
const reservedHeaders = new Set(['content-type', 'content-length', 'host', 'transfer-encoding', 'connection', signatureHeader.toLowerCase()])
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Wakes an agent that runs elsewhere by POSTing the wake to its URL as JSON ({@link HttpWakeBody}),
 * signed with `X-Svc-Signature: sha256=<hex HMAC-SHA256 of the exact body>` keyed by
 * `input.signingSecret` (see docs/adapters.md for verifying it).
 *
 * - 2xx → `accepted`: the agent was reached and finishes the run itself by reporting `final: true` to
 *   `POST /api/heartbeat-runs/{runId}/report`; the run engine enforces the run's timeout from there.
 * - another status (redirects are not followed) → `failed` with `httpStatus`.
 * - endpoint down, or no answer within `requestTimeoutMs` → `failed` with a sentence saying which;
 *   no answer within the run's own `timeoutMs` (when shorter) → `timed_out`; `signal` aborts → `cancelled`.
 * - `output` is the tail of the endpoint's answer. Error sentences name the URL's origin only, since
 *   webhook URLs often carry a token in their path or query.
 */
export function httpAdapter(options: HttpAdapterOptions = {}): AgentAdapter {
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000
  const tailBytes = options.outputTailBytes ?? defaultOutputTailBytes
  const egress = options.egress ?? {}
  const warnedOrigins = new Set<string>()
  // Once per origin: the run token (and every binding) crosses the network unencrypted.
  const warnPlainHttp = (origin: string): void => {
    if (warnedOrigins.has(origin)) return
    warnedOrigins.add(origin)
    const message = `slaw http adapter: waking ${origin} over plain http sends the run token and the agent's environment unencrypted; serve the endpoint over https`
    if (options.warn) options.warn(message)
    else process.emitWarning(message, 'SlawInsecureWake')
  }
  const inFlight = new Set<AbortController>()
  const pending = new Set<Promise<AdapterWakeResult>>()
  let closed = false

  return defineAgentAdapter({
    type: 'http',
    configSchema: httpConfigSchema,

    // What the schema cannot say: a url that parses, header names that are valid and not the adapter's own.
    validateConfig(config: Record<string, unknown>): ErrorDetail[] {
      const details: ErrorDetail[] = []
      if (typeof config.url === 'string' && !parseUrl(config.url)) details.push({ path: '/url', message: urlMessage })
      if (isRecord(config.headers)) {
        for (const [name, value] of Object.entries(config.headers)) {
          if (!headerName.test(name)) details.push({ path: `/headers/${name}`, message: 'not a valid header name' })
          else if (reservedHeaders.has(name.toLowerCase())) details.push({ path: `/headers/${name}`, message: `${name} is set by the adapter and cannot be configured` })
          else if (typeof value !== 'string' || /[\r\n\0]/.test(value)) details.push({ path: `/headers/${name}`, message: 'a header value must be a string without line breaks' })
        }
      }
      return details
    },

    async wake(input) {
      if (closed) return { status: 'cancelled', error: 'the http adapter is closed' }
      if (input.signal.aborted) return { status: 'cancelled', error: 'the run was cancelled before the agent was called' }
      const url = parseUrl(input.config.url)
      if (!url) return { status: 'failed', error: 'the agent has no valid url to call (adapterConfig.url)' }
      const stop = new AbortController()
      inFlight.add(stop)
      const p = post(url, input, stop.signal, requestTimeoutMs, tailBytes, egress, warnPlainHttp)
      pending.add(p)
      try {
        return await p
      } finally {
        inFlight.delete(stop)
        pending.delete(p)
      }
    },

    async close(): Promise<void> {
      closed = true
      for (const stop of inFlight) stop.abort()
      await Promise.all(pending)
    },
  })
}

function parseUrl(value: unknown): URL | null {
  if (typeof value !== 'string') return null
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null
  } catch {
    return null
  }
}

function post(
  url: URL,
  input: AdapterWakeInput<HttpAgentConfig>,
  closing: AbortSignal,
  requestTimeoutMs: number,
  tailBytes: number,
  egress: EgressPolicy,
  warnPlainHttp: (origin: string) => void,
): Promise<AdapterWakeResult> {
  const body: HttpWakeBody = {
    runId: input.runId,
    agentId: input.agentId,
    squadId: input.squadId,
    issueId: input.issueId,
    reason: input.reason,
    sentAt: new Date().toISOString(),
    env: input.env,
  }
  const payload = Buffer.from(JSON.stringify(body))
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(input.config.headers)) {
    if (headerName.test(name) && !reservedHeaders.has(name.toLowerCase())) headers[name] = value
  }
  headers['content-type'] = 'application/json'
  headers['content-length'] = String(payload.length)
  if (input.signingSecret) headers[signatureHeader] = wakeSignature(input.signingSecret, payload)

  const origin = url.origin
  // A literal IP is connected to without a lookup: check it here; a name is checked in the lookup.
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const plain = url.protocol === 'http:'
  if (isIP(host)) {
    const refused = egressRefusal(host, egress)
    if (refused) return Promise.resolve({ status: 'failed', httpStatus: null, error: `${origin} was not called: ${refused}` })
    if (plain && classifyAddress(host) !== 'loopback') warnPlainHttp(origin)
  }
  const lookup = guardedLookup(egress, (addresses) => {
    if (plain && addresses.some((a) => classifyAddress(a) !== 'loopback')) warnPlainHttp(origin)
  })
  // The run's own timeout wins when it is the shorter one: then the run is over, not just the call.
  const runDeadline = input.timeoutMs <= requestTimeoutMs
  const deadlineMs = Math.min(input.timeoutMs, requestTimeoutMs)
  const tail = new OutputTail(tailBytes)

  return new Promise<AdapterWakeResult>((resolve) => {
    let settled = false
    let req: ClientRequest | undefined
    const finish = (result: AdapterWakeResult): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      input.signal.removeEventListener('abort', onAbort)
      closing.removeEventListener('abort', onAbort)
      req?.destroy()
      const output = outputOf(tail.text(), result, input.env)
      resolve(output ? { ...result, output } : result)
    }
    const onAbort = (): void => finish({ status: 'cancelled', httpStatus: null, error: 'the run was cancelled while the agent was being called' })
    const timer = setTimeout(() => {
      finish(
        runDeadline
          ? { status: 'timed_out', httpStatus: null, error: `${origin} did not answer within the run's timeout (${deadlineMs} ms)` }
          : { status: 'failed', httpStatus: null, error: `${origin} did not answer within ${deadlineMs} ms` },
      )
    }, timerMs(deadlineMs))
    input.signal.addEventListener('abort', onAbort, { once: true })
    closing.addEventListener('abort', onAbort, { once: true })

    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    // agent: false: one connection per wake, so close() leaves no pooled socket behind.
    req = send(url, { method: 'POST', headers, agent: false, lookup })
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof EgressRefusedError) finish({ status: 'failed', httpStatus: null, error: `${origin} was not called: ${err.message}` })
      else finish({ status: 'failed', httpStatus: null, error: `${origin} could not be reached: ${describeNetError(err)}` })
    })
    req.on('response', (res) => {
      const status = res.statusCode ?? 0
      res.on('data', (chunk: Buffer) => tail.write(chunk))
      res.on('error', () => {})
      res.on('end', () => {
        if (status >= 200 && status < 300) finish({ status: 'accepted', httpStatus: status })
        else finish({ status: 'failed', httpStatus: status, error: `${origin} answered HTTP ${status}` })
      })
      res.on('close', () => {
        if (!res.complete) finish({ status: 'failed', httpStatus: status, error: `${origin} closed the connection before its answer was complete` })
      })
    })
    req.end(payload)
  })
}

/**
 * What is kept of the endpoint's answer: a 2xx answer's tail, and of any other answer only its
 * first line, clipped (an error page can echo the request: the run token, the bindings). Both with
 * the wake's secrets (the run token, binding values) and token-looking strings replaced.
 */
function outputOf(text: string, result: AdapterWakeResult, env: Record<string, string>): string {
  if (!text) return text
  const ok = result.status === 'accepted'
  const kept = ok ? text : (text.split(/\r?\n/).find((l) => l.trim()) ?? '').trim()
  const scrubbed = scrub(kept, env)
  return ok || scrubbed.length <= failedAnswerChars ? scrubbed : `${scrubbed.slice(0, failedAnswerChars)}…`
}

/** The run token and every binding value (not slaw's own ids and URL) of at least 8 characters. */
function scrub(text: string, env: Record<string, string>): string {
  let out = text
  for (const [name, value] of Object.entries(env)) {
    if (value.length >= 8 && (name === 'SVC_API_KEY' || !name.startsWith('SVC_'))) out = out.split(value).join('[REDACTED]')
  }
  return out.replace(/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, '[REDACTED]').replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [REDACTED]')
}

function describeNetError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused (nothing listens there)'
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'its host name does not resolve'
    case 'ECONNRESET':
      return 'the connection was reset'
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the host is unreachable'
    default:
      return err.code ? `${err.code}` : err.message
  }
}
