import t from 'tap'
import { eachBackend, operatorToken, type TestApi } from './helpers/instance.js'
import { addIssue, isError, unknownId } from './helpers/fixtures.js'

/** inject() with a raw payload and explicit headers: what a careless or hostile client sends. */
async function raw(api: TestApi, method: string, url: string, payload: string | Buffer | undefined, headers: Record<string, string> = {}) {
  const res = await api.instance.app.inject({ method: method as 'POST', url, headers: { authorization: `Bearer ${operatorToken}`, ...headers }, ...(payload !== undefined ? { payload } : {}) })
  let body: unknown
  try {
    body = JSON.parse(res.body)
  } catch {
    body = res.body
  }
  return { status: res.statusCode, body, headers: res.headers }
}

eachBackend(t, 'bad input', async (t, api) => {
  await t.test('bodies', async (t) => {
    const s = await api.seed('Bad')
    const issue = await addIssue(api, s.squadId, { title: 'target', assigneeAgentId: s.agentId })
    const json = { 'content-type': 'application/json' }

    for (const [label, payload] of [
      ['truncated', '{"name":'],
      ['trailing comma', '{"name":"x",}'],
      ['single quotes', "{'name':'x'}"],
      ['bare word', 'squad'],
    ] as const) {
      const res = await raw(api, 'POST', '/api/squads', payload, json)
      isError(t, res, 400, 'invalid_payload', `malformed JSON: ${label}`)
    }
    isError(t, await raw(api, 'PATCH', `/api/issues/${issue.id}`, '{"title": "x"', json), 400, 'invalid_payload', 'malformed JSON on PATCH')
    isError(t, await raw(api, 'POST', '/api/squads', '', json), 400, 'invalid_payload', 'empty JSON body')
    isError(t, await raw(api, 'POST', '/api/squads', 'null', json), 400, 'invalid_payload', 'null body')
    isError(t, await raw(api, 'POST', '/api/squads', '[]', json), 400, 'invalid_payload', 'array body')
    isError(t, await raw(api, 'POST', '/api/squads', '"Platform"', json), 400, 'invalid_payload', 'string body')

    // Wrong types: no coercion in bodies; details name the field.
    const wrong: Array<[string, string, unknown, string]> = [
      ['POST', '/api/squads', { name: 5 }, '/name'],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: ['a'] }, '/title'],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: 'x', assigneeAgentId: 42 }, '/assigneeAgentId'],
      ['POST', `/api/issues/${issue.id}/comments`, { body: 'x', reopen: 'true' }, '/reopen'],
      ['POST', `/api/issues/${issue.id}/checkout`, { agentId: s.agentId, expectedStatuses: 'todo' }, '/expectedStatuses'],
      ['PATCH', `/api/squads/${s.squadId}/budgets`, { budgetMonthlyCents: '5' }, '/budgetMonthlyCents'],
      ['PATCH', `/api/squads/${s.squadId}/budgets`, { budgetMonthlyCents: 5.5 }, '/budgetMonthlyCents'],
      ['POST', `/api/agents/${s.agentId}/keys`, { name: true }, '/name'],
    ]
    for (const [method, url, body, path] of wrong) {
      const res = await api.call(method, url, body)
      isError(t, res, 400, 'invalid_payload', `wrong type ${path}`)
      t.equal(res.body.details?.[0]?.path, path, `details[].path names ${path}`)
    }

    // Unknown fields.
    for (const [method, url, body] of [
      ['POST', '/api/squads', { name: 'x', owner: 'me' }],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: 'x', number: 7 }],
      ['PATCH', `/api/issues/${issue.id}`, { checkoutAgentId: s.agentId }],
      ['POST', `/api/squads/${s.squadId}/agents`, { name: 'x', role: 'x', adapterType: 'process', status: 'paused' }],
    ] as Array<[string, string, Record<string, unknown>]>) {
      const res = await api.call(method, url, body)
      isError(t, res, 400, 'invalid_payload', `unknown field in ${method} ${url.replace(/[0-9a-f-]{36}/g, ':id')}`)
      const extra = Object.keys(body).find((k) => !['name', 'title', 'role', 'adapterType'].includes(k))
      t.equal(res.body.details?.[0]?.path, `/${extra}`)
      t.match(res.body.details?.[0]?.message, /not a known field/)
    }

    // NUL characters cannot be stored in PostgreSQL text: refused as input, never a 500.
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'a\u0000b' }), 400, 'invalid_payload', 'NUL in a body string')
    isError(
      t,
      await api.call('POST', `/api/issues/${issue.id}/interactions`, { kind: 'request_confirmation', payload: { prompt: 'ok', note: 'x\u0000' } }),
      400,
      'invalid_payload',
      'NUL deep in a payload',
    )
    isError(
      t,
      await api.call('POST', `/api/squads/${s.squadId}/activity`, { actorId: 'a', action: 'b', entityType: 'c', entityId: 'd', details: { 'k\u0000': 1 } }),
      400,
      'invalid_payload',
      'NUL in a key',
    )
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?q=a%00b`), 400, 'invalid_payload', 'NUL in a query string')

    // Size and media type.
    const big = JSON.stringify({ title: 'big', description: 'x'.repeat(1024 * 1024) })
    isError(t, await raw(api, 'POST', `/api/squads/${s.squadId}/issues`, big, json), 413, 'payload_too_large', 'body over 1 MiB')
    const justUnder = JSON.stringify({ title: 'fits', description: 'y'.repeat(190_000) })
    t.equal((await raw(api, 'POST', `/api/squads/${s.squadId}/issues`, justUnder, json)).status, 201, 'a large body under the limit')
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
      isError(t, await raw(api, 'POST', '/api/squads', '{"name":"x"}', { 'content-type': type }), 415, 'unsupported_media_type', type)
    }
    isError(t, await raw(api, 'POST', '/api/squads', '{"name":"x"}', {}), 415, 'unsupported_media_type', 'no content-type with a body')
    t.equal((await raw(api, 'POST', '/api/squads', '{"name":"Charset"}', { 'content-type': 'application/json; charset=utf-8' })).status, 201, 'JSON with a charset is fine')
    t.equal((await api.call('GET', '/api/squads')).body.squads.length, 2, 'none of the bad requests created a squad')
  })

  await t.test('paths and query strings', async (t) => {
    const s = await api.seed('Paths')
    const issue = await addIssue(api, s.squadId, { title: 'target', assigneeAgentId: s.agentId })
    const comment = (await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'c' })).body.comment
    const ask = (await api.call('POST', `/api/issues/${issue.id}/interactions`, { kind: 'request_confirmation', payload: { prompt: 'ok?' } })).body.interaction
    const key = (await api.call('GET', `/api/agents/${s.agentId}/keys`)).body.keys[0]

    // Every route of this part, with a valid body, so that only the path can be wrong.
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/api/squads/:squadId'],
      ['PATCH', '/api/squads/:squadId', { name: 'x' }],
      ['DELETE', '/api/squads/:squadId'],
      ['POST', '/api/squads/:squadId/archive'],
      ['GET', '/api/squads/:squadId/org'],
      ['GET', '/api/squads/:squadId/agents'],
      ['POST', '/api/squads/:squadId/agents', { name: 'x', role: 'x', adapterType: 'process' }],
      ['GET', '/api/squads/:squadId/issues'],
      ['POST', '/api/squads/:squadId/issues', { title: 'x' }],
      ['GET', '/api/squads/:squadId/activity'],
      ['POST', '/api/squads/:squadId/activity', { actorId: 'a', action: 'b', entityType: 'c', entityId: 'd' }],
      ['GET', '/api/agents/:agentId'],
      ['PATCH', '/api/agents/:agentId', { title: 'x' }],
      ['DELETE', '/api/agents/:agentId'],
      ['PATCH', '/api/agents/:agentId/permissions', {}],
      ['PATCH', '/api/agents/:agentId/instructions-path', { instructionsPath: 'a.md' }],
      ['POST', '/api/agents/:agentId/pause'],
      ['POST', '/api/agents/:agentId/resume'],
      ['POST', '/api/agents/:agentId/terminate'],
      ['GET', '/api/agents/:agentId/keys'],
      ['POST', '/api/agents/:agentId/keys', { name: 'k' }],
      ['DELETE', '/api/agents/:agentId/keys/:keyId'],
      ['GET', '/api/agents/:agentId/runtime-state'],
      ['POST', '/api/agents/:agentId/runtime-state/reset-session'],
      ['GET', '/api/issues/:issueId'],
      ['PATCH', '/api/issues/:issueId', { title: 'x' }],
      ['DELETE', '/api/issues/:issueId'],
      ['GET', '/api/issues/:issueId/heartbeat-context'],
      ['POST', '/api/issues/:issueId/checkout', { agentId: s.agentId }],
      ['POST', '/api/issues/:issueId/release'],
      ['GET', '/api/issues/:issueId/activity'],
      ['GET', '/api/issues/:issueId/comments'],
      ['POST', '/api/issues/:issueId/comments', { body: 'x' }],
      ['GET', '/api/issues/:issueId/comments/:commentId'],
      ['GET', '/api/issues/:issueId/documents'],
      ['GET', '/api/issues/:issueId/documents/:key'],
      ['PUT', '/api/issues/:issueId/documents/:key', { title: 'x', format: 'markdown', body: 'x' }],
      ['DELETE', '/api/issues/:issueId/documents/:key'],
      ['GET', '/api/issues/:issueId/interactions'],
      ['POST', '/api/issues/:issueId/interactions', { kind: 'request_confirmation', payload: { prompt: 'x' } }],
      ['POST', '/api/issues/:issueId/interactions/:interactionId/accept', {}],
      ['POST', '/api/issues/:issueId/interactions/:interactionId/reject', {}],
      ['POST', '/api/issues/:issueId/interactions/:interactionId/respond', { response: {} }],
      ['DELETE', '/api/operator-keys/:opKeyId'],
    ]
    const good: Record<string, string> = { squadId: s.squadId, agentId: s.agentId, keyId: key.id, issueId: issue.id, commentId: comment.id, key: 'plan', interactionId: ask.id, opKeyId: unknownId }
    const malformed = ['not-a-uuid', `${unknownId}0`, unknownId.replace(/-/g, ''), '%00', '%20', '..', '%E0%A4%A', 'x'.repeat(300), "1'%20or%20'1'='1"]
    for (const [method, template, body] of routes) {
      const params = [...template.matchAll(/:(\w+)/g)].map((m) => m[1]!).filter((p) => p !== 'key')
      for (const param of params) {
        for (const bad of malformed) {
          const url = template.replace(/:(\w+)/g, (_m, p: string) => (p === param ? bad : good[p]!))
          const res = await api.call(method, url, body)
          if (res.status !== 404 || res.body?.code !== 'not_found') {
            t.fail(`${method} ${template} with ${param}=${bad.slice(0, 20)}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
          }
        }
      }
    }
    t.pass('every malformed id in every path segment answered 404 not_found')
    isError(t, await api.call('GET', `/api/squads/${'x'.repeat(300)}`), 404, 'not_found', 'an over-long segment has the error body')
    isError(t, await api.call('GET', '/api/issues/%E0%A4%A'), 404, 'not_found', 'bad percent-encoding has the error body')
    t.equal((await api.call('GET', `/api/squads/${s.squadId}`)).status, 200, 'the squad survived the sweep')

    // Huge or malformed query values: 400, never 500.
    const huge = 'x'.repeat(10_000)
    for (const q of [
      `q=${huge}`,
      `status=${'todo,'.repeat(200)}todo`,
      `assigneeAgentId=${huge}`,
      `projectId=${huge}`,
      'limit=99999999999999999999999',
      'limit=1e400',
      'offset=huge',
      `limit=${huge}`,
    ]) {
      isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?${q}`), 400, 'invalid_payload', `issues ?${q.slice(0, 30)}`)
    }
    for (const q of [`entityType=${huge}`, `entityId=${huge}`, `agentId=${huge}`, 'limit=-1']) {
      isError(t, await api.call('GET', `/api/squads/${s.squadId}/activity?${q}`), 400, 'invalid_payload', `activity ?${q.slice(0, 30)}`)
    }
    isError(t, await api.call('GET', `/api/issues/${issue.id}/comments?after=${huge}`), 400, 'invalid_payload', 'comments ?after huge')
    isError(t, await api.call('GET', `/api/agents/me/inbox-lite?status=${huge}`, undefined, s.agentToken), 400, 'invalid_payload', 'inbox ?status huge')
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/issues?unknown=1&q=target`)).body.issues.length, 1, 'unknown query parameters are ignored')

    // No route.
    for (const [method, url] of [
      ['GET', '/api/nope'],
      ['GET', '/api'],
      ['PUT', '/api/squads'],
      ['POST', `/api/issues/${issue.id}/explode`],
      ['GET', '/'],
    ]) {
      isError(t, await api.call(method!, url!), 404, 'not_found', `no route ${method} ${url}`)
    }
  })

  await t.test('hostile payloads never 500', async (t) => {
    const s = await api.seed('Hostile')
    const issue = await addIssue(api, s.squadId, { title: 'target', assigneeAgentId: s.agentId })
    let deep: Record<string, unknown> = { leaf: true }
    for (let i = 0; i < 2000; i++) deep = { d: deep }
    const cases: Array<[string, string, unknown]> = [
      ['POST', `/api/issues/${issue.id}/interactions`, { kind: 'request_confirmation', payload: { prompt: 'ok', deep } }],
      ['POST', `/api/squads/${s.squadId}/activity`, { actorId: 'a', action: 'b', entityType: 'c', entityId: 'd', details: deep }],
      ['PATCH', `/api/agents/${s.agentId}/permissions`, { deep }],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: '\ud800 lone surrogate' }],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: '💥 '.repeat(100), description: '\u202e right-to-left \ufeff' }],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: 'x', __proto__: { admin: true } }],
      ['POST', '/api/squads', JSON.parse('{"name":"proto","constructor":{"prototype":{"polluted":true}}}')],
      ['GET', `/api/squads/${s.squadId}/issues?q=%ED%A0%BD%FF`, undefined],
      ['GET', `/api/squads/${s.squadId}/issues?q=${encodeURIComponent('a:* & !b | (c <-> d)')}`, undefined],
    ]
    for (const [method, url, body] of cases) {
      const res = await api.call(method, url, body)
      t.ok(res.status < 500, `${method} ${url.slice(0, 60)}: ${res.status}`)
      if (res.status >= 400) isError(t, res, res.status, res.body?.code, `${method} ${url.slice(0, 40)} error body`)
    }
    t.notOk(({} as Record<string, unknown>).polluted, 'no prototype pollution')
  })
})
