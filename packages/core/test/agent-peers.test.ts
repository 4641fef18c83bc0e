import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { addAgent } from './helpers/fixtures.js'

eachBackend(t, 'another agent sees only the public fields of an agent', async (t, api) => {
  const s = await api.seed('Peers')
  const bob = await addAgent(api, s.squadId, 'bob', { prompt: 'private prompt' })
  t.equal((await api.call('PATCH', `/api/agents/${bob.id}/permissions`, { canDeploy: true, scopes: ['prod'] })).status, 200)

  const asPeer = await api.call('GET', `/api/agents/${bob.id}`, undefined, s.agentToken)
  t.equal(asPeer.status, 200)
  t.same(Object.keys(asPeer.body.agent).sort(), ['adapterType', 'id', 'name', 'role', 'squadId', 'status', 'title'], 'the public fields (docs/authorization.md)')
  t.notOk(JSON.stringify(asPeer.body).includes('prod'), 'no permissions')
  t.notOk(JSON.stringify(asPeer.body).includes('private prompt'), 'no prompt')

  const asSelf = await api.call('GET', `/api/agents/${bob.id}`, undefined, bob.token)
  t.same(asSelf.body.agent.permissions, { canDeploy: true, scopes: ['prod'] }, 'the agent itself sees its permissions')
  const asOperator = await api.call('GET', `/api/agents/${bob.id}`)
  t.same(asOperator.body.agent.permissions, { canDeploy: true, scopes: ['prod'] }, 'the Operator sees them')
  t.equal(asOperator.body.agent.prompt, 'private prompt')
})
