import t from 'tap'
import { eachBackend } from './helpers/instance.js'

// A name with a zero-width space or a right-to-left override renders as another name ("alice" and
// "alice\u200B", "admin\u202Enimda") in mentions and UIs. Such names are refused, with details.
const spoofs = ['alice\u200B', 'ali\u200Dce', 'al\uFEFFice', 'evil\u202Eecila', 'a\u2066lice\u2069', 'x\u200Fy', 'tab\there']

eachBackend(t, 'squad and agent names with invisible or bidi characters answer 400 with details; ordinary Unicode names pass', async (t, api) => {
  const { squadId, agentId } = await api.seed('Names')
  for (const name of spoofs) {
    const label = JSON.stringify(name)
    const squad = await api.call('POST', '/api/squads', { name })
    t.equal(squad.status, 400, `squad ${label}`)
    t.match(squad.body, { code: 'invalid_payload', details: [{ path: '/name', message: /invisible, control or text-direction characters \(U\+[0-9A-F]{4}/ }] })
    t.equal((await api.call('PATCH', `/api/squads/${squadId}`, { name })).status, 400, `squad rename ${label}`)
    const agent = await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'engineer', adapterType: 'process' })
    t.equal(agent.status, 400, `agent ${label}`)
    t.match(agent.body.details, [{ path: '/name' }])
    t.equal((await api.call('PATCH', `/api/agents/${agentId}`, { name })).status, 400, `agent rename ${label}`)
  }
  for (const name of ['Zoë 🚀', 'فريق', '東京チーム', 'O\u2019Brien']) {
    t.equal((await api.call('POST', '/api/squads', { name })).status, 201, `squad ${name}`)
    t.equal((await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'engineer', adapterType: 'process' })).status, 201, `agent ${name}`)
  }
})
