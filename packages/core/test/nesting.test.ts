import t from 'tap'
import { eachBackend, operatorToken } from './helpers/instance.js'
import { addIssue, isError } from './helpers/fixtures.js'

/** `{"a":{"a":…}}` nested `depth` levels deep, as text (built without recursion). */
const nested = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth)
const nestedArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

eachBackend(t, 'JSON nesting depth', async (t, api) => {
  const s = await api.seed('Deep')
  const issue = await addIssue(api, s.squadId, { title: 'deep' })
  const project = await api.call('POST', `/api/squads/${s.squadId}/projects`, { name: 'P' })
  t.equal(project.status, 201)
  const send = async (method: string, url: string, body: string) => {
    const res = await api.instance.app.inject({ method: method as 'POST', url, headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' }, payload: body })
    return { status: res.statusCode, body: JSON.parse(res.body), headers: res.headers }
  }

  const targets: Array<[string, string, (inner: string) => string, () => Promise<number>]> = [
    [
      'interaction payload',
      `/api/issues/${issue.id}/interactions`,
      (x) => `{"kind":"request_confirmation","payload":{"q":${x}}}`,
      async () => (await api.call('GET', `/api/issues/${issue.id}/interactions`)).body.interactions.length,
    ],
    [
      'workspace metadata',
      `/api/projects/${project.body.project.id}/workspaces`,
      (x) => `{"name":"w","metadata":{"m":${x}}}`,
      async () => (await api.call('GET', `/api/projects/${project.body.project.id}/workspaces`)).body.workspaces.length,
    ],
    [
      'agent permissions',
      `/api/agents/${s.agentId}/permissions`,
      (x) => `{"p":${x}}`,
      async () => Object.keys((await api.call('GET', `/api/agents/${s.agentId}`)).body.agent.permissions ?? {}).length,
    ],
  ]
  for (const [label, url, wrap, count] of targets) {
    const method = label === 'agent permissions' ? 'PATCH' : 'POST'
    const before = await count()
    for (const [what, inner] of [
      ['objects', nested(5000)],
      ['arrays', nestedArray(5000)],
    ] as const) {
      const res = await send(method, url, wrap(inner))
      isError(t, { status: res.status, body: res.body, headers: res.headers }, 400, 'invalid_payload', `${label}: 5,000 levels of ${what}`)
      t.match(res.body.error, /nested deeper than 32/)
    }
    t.equal(await count(), before, `${label}: nothing stored`)
  }

  // 32 levels in all is accepted (the body itself is the first level).
  const ok = await send('PATCH', `/api/agents/${s.agentId}/permissions`, `{"p":${nested(31)}}`)
  t.equal(ok.status, 200, 'depth 32 is accepted')
  isError(t, await send('PATCH', `/api/agents/${s.agentId}/permissions`, `{"p":${nested(32)}}`), 400, 'invalid_payload', 'depth 33 is not')
  // Any route: the check is at body parse.
  isError(t, await send('POST', '/api/squads', nested(5000)), 400, 'invalid_payload', 'any body')
})
