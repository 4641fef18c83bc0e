import { describe, expect, it } from 'vitest'
import { ApiFailure, createConsoleClient, describeFailure, unwrap } from '../src/lib/api'

describe('API answers', () => {
  it('unwrap returns the data of a 2xx answer', () => {
    expect(unwrap({ data: { ok: true }, response: new Response(null, { status: 200 }) })).toEqual({ ok: true })
  })
  it('unwrap throws the typed error of a refused call, keeping status and code', () => {
    const call = () => unwrap({ error: { error: 'The issue is checked out by another agent.', code: 'issue_checked_out' }, response: new Response(null, { status: 409 }) })
    expect(call).toThrow(ApiFailure)
    try {
      call()
    } catch (err) {
      expect(err).toMatchObject({ status: 409, code: 'issue_checked_out' })
      expect(describeFailure(err)).toBe('The issue is checked out by another agent. (issue_checked_out)')
    }
  })
  it('says what a 401, a 429 and a network failure mean', () => {
    expect(describeFailure(new ApiFailure(401, 'unauthorized', 'x'))).toMatch(/session has ended/)
    expect(describeFailure(new ApiFailure(429, 'rate_limited', 'x'))).toMatch(/Too many attempts/)
    expect(describeFailure(new TypeError('fetch failed'))).toBe('Could not reach the server: fetch failed')
  })
  it('the console client sends no Authorization header (the session cookie authenticates)', async () => {
    const seen: Request[] = []
    const client = createConsoleClient('http://127.0.0.1:9', async (req) => {
      seen.push(req)
      return new Response(JSON.stringify({ session: { expiresAt: '2026-01-01T00:00:00Z' } }), { status: 200, headers: { 'content-type': 'application/json' } })
    })
    const res = await client.GET('/api/console/session')
    expect(res.data?.session.expiresAt).toBe('2026-01-01T00:00:00Z')
    expect(seen[0]!.headers.get('authorization')).toBeNull()
    expect(seen[0]!.url).toBe('http://127.0.0.1:9/api/console/session')
  })
})
