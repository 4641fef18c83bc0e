import t from 'tap'
import { eachBackend } from './helpers/instance.js'

// An instance created without a tower client: the controls say so plainly (the tower client's own
// suite in packages/tower-client drives them against a real tower).
eachBackend(t, 'tower controls without a tower client', async (t, api) => {
  const status = await api.call('GET', '/api/tower')
  t.equal(status.status, 200)
  t.equal(status.body.tower.state, 'disabled')
  t.equal(status.body.tower.gated, false)
  t.equal(status.body.tower.towerUrl, null)
  for (const [url, body] of [
    ['/api/tower/connect', { towerUrl: 'http://127.0.0.1:9' }],
    ['/api/tower/disconnect', undefined],
    ['/api/tower/re-enroll', undefined],
    ['/api/tower/sync', undefined],
  ] as const) {
    const res = await api.call('POST', url, body)
    t.equal(res.status, 409, url)
    t.equal(res.body.code, 'tower_not_configured')
    t.match(res.body.error, /towerClient/)
  }
  const { squadId, agentToken } = await api.seed()
  const install = await api.call('POST', '/api/tower/skills/some-skill/install', { squadId })
  t.equal(install.status, 409)
  t.equal(install.body.code, 'tower_not_configured')
  const agent = await api.call('GET', '/api/tower', undefined, agentToken)
  t.equal(agent.status, 403, 'Operator only')
  t.equal((await api.call('GET', '/api/tower', undefined, null)).status, 401)
})
