import t from 'tap'
import { eachBackend } from './helpers/instance.js'

// docs/secrets.md: an agent key answers 403 on the secrets API, but 404 for another squad's
// resources, so ids do not leak. Another squad's secret used to answer 403.
eachBackend(t, "another squad's secret and provider configuration answer 404 to an agent key; its own squad's 403", async (t, api) => {
  const mine = await api.seed('Mine')
  const theirs = await api.seed('Theirs')
  const theirSecret = (await api.call('POST', `/api/squads/${theirs.squadId}/secrets`, { name: 'their token', value: 'their-value-1' })).body.secret
  const ownSecret = (await api.call('POST', `/api/squads/${mine.squadId}/secrets`, { name: 'own token', value: 'own-value-1' })).body.secret
  const theirConfig = (await api.call('POST', `/api/squads/${theirs.squadId}/secret-provider-configs`, { provider: 'local_encrypted', name: 'theirs' })).body.providerConfig
  const ownConfig = (await api.call('POST', `/api/squads/${mine.squadId}/secret-provider-configs`, { provider: 'local_encrypted', name: 'own' })).body.providerConfig
  const as = (method: string, url: string, body?: unknown) => api.call(method, url, body, mine.agentToken)
  const routes = (secretId: string, configId: string): Array<[string, string, unknown?]> => [
    ['GET', `/api/secrets/${secretId}`],
    ['PATCH', `/api/secrets/${secretId}`, { name: 'renamed' }],
    ['POST', `/api/secrets/${secretId}/rotate`, { value: 'new' }],
    ['DELETE', `/api/secrets/${secretId}`],
    ['GET', `/api/secrets/${secretId}/usage`],
    ['GET', `/api/secrets/${secretId}/access-events`],
    ['GET', `/api/secret-provider-configs/${configId}`],
    ['PATCH', `/api/secret-provider-configs/${configId}`, { name: 'x' }],
    ['DELETE', `/api/secret-provider-configs/${configId}`],
    ['POST', `/api/secret-provider-configs/${configId}/default`],
    ['POST', `/api/secret-provider-configs/${configId}/health`],
  ]
  for (const [method, url, body] of routes(theirSecret.id, theirConfig.id)) {
    const res = await as(method, url, body)
    t.equal(res.status, 404, `${method} ${url.replace(/[0-9a-f-]{36}/, '<other squad>')}: 404`)
    t.equal(res.body.code, 'not_found')
  }
  for (const [method, url, body] of routes(ownSecret.id, ownConfig.id)) {
    t.equal((await as(method, url, body)).status, 403, `${method} ${url.replace(/[0-9a-f-]{36}/, '<own squad>')}: 403`)
  }
  t.equal((await as('GET', `/api/squads/${theirs.squadId}/secrets`)).status, 404, "another squad's list: 404")
  t.equal((await as('GET', `/api/squads/${mine.squadId}/secrets`)).status, 403, 'its own list: 403')
  t.equal((await api.call('GET', `/api/secrets/${theirSecret.id}`)).status, 200, 'the Operator still reads both')
})
