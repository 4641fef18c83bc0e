import createClient, { type Client, type FetchResponse } from 'openapi-fetch'
import type { components, operations, paths } from './generated/openapi.js'
import { streamEvents, type EventsOptions, type ResyncEvent, type SquadEvent } from './events.js'

export type { components, operations, paths }
export type { EventsOptions, SquadEvent, SquadEventType, SquadEventOf, ResyncEvent } from './events.js'
export { EventStreamError } from './events.js'

/** Every named schema of the API (`Schemas['Issue']`). */
export type Schemas = components['schemas']

// The records as the API sends them, under the names the OpenAPI document gives them.
export type Squad = Schemas['Squad']
export type SquadSummary = Schemas['SquadSummary']
export type Agent = Schemas['Agent']
export type AgentSummary = Schemas['AgentSummary']
export type ApiKey = Schemas['ApiKey']
export type Issue = Schemas['Issue']
export type IssueDetail = Schemas['IssueDetail']
export type IssueSummary = Schemas['IssueSummary']
export type IssueRef = Schemas['IssueRef']
export type Comment = Schemas['Comment']
export type IssueDocument = Schemas['IssueDocument']
export type Interaction = Schemas['Interaction']
export type HeartbeatRun = Schemas['HeartbeatRun']
export type Approval = Schemas['Approval']
export type ApprovalDetail = Schemas['ApprovalDetail']
export type Goal = Schemas['Goal']
export type Project = Schemas['Project']
export type Routine = Schemas['Routine']
export type RoutineTrigger = Schemas['RoutineTrigger']
export type RoutineRun = Schemas['RoutineRun']
export type Secret = Schemas['Secret']
export type CostEvent = Schemas['CostEvent']
export type CostSummary = Schemas['CostSummary']
export type SquadBudget = Schemas['SquadBudget']
export type AgentBudget = Schemas['AgentBudget']
export type BudgetOverview = Schemas['BudgetOverview']
export type ActivityEntry = Schemas['ActivityEntry']
export type DashboardSummary = Schemas['DashboardSummary']
export type Skill = Schemas['Skill']
/** `GET /api/heartbeat-runs/{runId}/output`: the kept tail of a run's live output. */
export type RunOutput = Schemas['RunOutput']
/** The body of every error answer: `{ error, code, details? }` (docs/errors.md lists the codes). */
export type ApiError = Schemas['ErrorBody']

type Body<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never
export type CheckoutBody = Body<'checkoutIssue'>
export type RunReportBody = Body<'reportHeartbeatRun'>

export interface SlawClientOptions {
  /** Where the instance listens, e.g. `http://127.0.0.1:3100` (no trailing `/api`). */
  baseUrl: string
  /**
   * An Operator key or an agent key; sent as `Authorization: Bearer …`. Leave it out in a browser
   * signed in to the console: the same-origin session cookie then authenticates every call.
   */
  token?: string
  /** The heartbeat run this agent acts in (sent as `X-Svc-Run-Id`), for a run's own token. */
  runId?: string
  /** A fetch of your own (tests, proxies, retries); default: the global fetch. */
  fetch?: (input: Request) => Promise<Response>
}

/**
 * What a helper resolves to: openapi-fetch's answer to that operation. Written out, so that the
 * declarations import `FetchResponse` by name: inferred, they reach it through a namespace import of
 * openapi-fetch, which TypeScript 7 cannot resolve in the CommonJS declarations (openapi-fetch's
 * `index.d.cts` has an `export =`).
 */
type HelperAnswer<Operation extends Record<string | number, any>, Init> = Promise<FetchResponse<Operation, Init, `${string}/${string}`>>

/** The helpers, typed by the calls they make (so `checkout(...).data` is `{ issue: Issue }`). */
function helpers(client: Client<paths>): {
  checkout(issueId: string, body: CheckoutBody): HelperAnswer<paths['/api/issues/{id}/checkout']['post'], { params: { path: { id: string } }; body: CheckoutBody }>
  report(runId: string, body: RunReportBody): HelperAnswer<paths['/api/heartbeat-runs/{runId}/report']['post'], { params: { path: { runId: string } }; body: RunReportBody }>
} {
  return {
    /** `POST /api/issues/{id}/checkout`: takes the issue for an agent (409 `issue_checked_out` when someone else has it). */
    checkout: (issueId, body) => client.POST('/api/issues/{id}/checkout', { params: { path: { id: issueId } }, body }),
    /** `POST /api/heartbeat-runs/{runId}/report`: an agent's report on its run. */
    report: (runId, body) => client.POST('/api/heartbeat-runs/{runId}/report', { params: { path: { runId } }, body }),
  }
}

export type SlawClient = Client<paths> &
  ReturnType<typeof helpers> & {
    /**
     * The squad's live events (`GET /api/squads/{squadId}/events`, Server-Sent Events), as an async
     * iterator of a union discriminated by `type`. It reconnects by itself, resuming after the last
     * event it yielded (`Last-Event-ID`), until `signal` aborts or the loop is left.
     */
    events(squadId: string, options?: EventsOptions): AsyncIterable<SquadEvent | ResyncEvent>
  }

/**
 * A client of a slaw instance's API. Every path, parameter, body and answer is typed from the
 * OpenAPI document; every call resolves to `{ data, error, response }`, with `error` the typed
 * `{ error, code, details? }` body of a 4xx or 5xx answer (never a thrown string).
 */
export function createSlawClient(options: SlawClientOptions): SlawClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.runId) headers['x-svc-run-id'] = options.runId
  const fetchImpl = options.fetch ?? ((input: Request) => globalThis.fetch(input))
  const client = createClient<paths>({ baseUrl, headers, fetch: fetchImpl })
  return Object.assign(client, helpers(client), {
    events: (squadId: string, eventOptions: EventsOptions = {}) => streamEvents({ baseUrl, headers, fetch: fetchImpl }, squadId, eventOptions),
  })
}
