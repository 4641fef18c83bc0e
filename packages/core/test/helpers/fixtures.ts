import type { Test } from 'tap'
import type { TestApi } from './instance.js'

type Res = Awaited<ReturnType<TestApi['call']>>

/** Creates an agent (Operator) and a key for it; returns its id and token. */
export async function addAgent(api: TestApi, squadId: string, name: string, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const agent = await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'software_engineer', adapterType: 'process', ...extra })
  if (agent.status !== 201) throw new Error(`addAgent: ${agent.status} ${JSON.stringify(agent.body)}`)
  const key = await api.call('POST', `/api/agents/${agent.body.agent.id}/keys`, { name: `${name}-key` })
  if (key.status !== 201) throw new Error(`addAgent key: ${key.status} ${JSON.stringify(key.body)}`)
  return { id: agent.body.agent.id, token: key.body.token }
}

/** Creates an issue (Operator unless a token is given) and returns it. */
export async function addIssue(api: TestApi, squadId: string, body: Record<string, unknown>, token?: string): Promise<any> {
  const res = await api.call('POST', `/api/squads/${squadId}/issues`, body, token)
  if (res.status !== 201) throw new Error(`addIssue: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.issue
}

/**
 * Asserts an error answer: the status, the code, and the exact body shape of docs/errors.md
 * (`{error, code}` plus `details[]` of `{path, message}` when present, nothing else).
 */
export function isError(t: Test, res: Res, status: number, code: string, message?: string): void {
  const label = message ?? `${status} ${code}`
  t.equal(res.status, status, `${label}: status`, { body: res.body })
  const body = res.body as Record<string, unknown> | undefined
  t.equal(body?.code, code, `${label}: code`)
  t.same(shapeProblems(body), [], `${label}: body is {error, code, details?}`)
}

function shapeProblems(body: unknown): string[] {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return ['not a JSON object']
  const b = body as Record<string, unknown>
  const out: string[] = []
  if (typeof b.error !== 'string' || !b.error) out.push('error is not a non-empty string')
  if (typeof b.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(b.code)) out.push('code is not snake_case')
  for (const k of Object.keys(b)) if (!['error', 'code', 'details'].includes(k)) out.push(`unexpected field ${k}`)
  if ('details' in b) {
    if (!Array.isArray(b.details)) out.push('details is not an array')
    else for (const d of b.details as Array<Record<string, unknown>>) if (typeof d?.path !== 'string' || typeof d?.message !== 'string') out.push('detail without path/message')
  }
  return out
}

/** The squad's activity entries (Operator), newest first. */
export async function activityOf(api: TestApi, squadId: string, query = ''): Promise<any[]> {
  const res = await api.call('GET', `/api/squads/${squadId}/activity${query ? `?${query}` : ''}`)
  if (res.status !== 200) throw new Error(`activityOf: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.activity
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A well-formed UUID nothing has. */
export const unknownId = '01a2016d-4579-7b3a-99bd-85bf68260266'

/**
 * The outbox once the rows `found` looks for are readable. `readAfter` shows a row only when every
 * older transaction on the database server has ended, and on a shared test server other test
 * files' transactions can hold that back for a moment: waiting for the rows, not for a time, keeps
 * the test deterministic under load (bounded by tap's timeout).
 */
export async function outboxOnce(
  storage: { outbox: { readAfter(after: string, limit: number): Promise<Array<{ entityType: string; entityId: string; payload: any }>> } },
  found: (rows: Array<{ entityType: string; entityId: string; payload: any }>) => boolean,
) {
  for (;;) {
    const rows = await storage.outbox.readAfter('0', 10_000)
    if (found(rows)) return rows
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
