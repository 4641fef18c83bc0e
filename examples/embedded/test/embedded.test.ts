import t from 'tap'
import { demo, startEmbedded } from '../src/main.js'

t.test('the embedded example runs the core loop', async (t) => {
  const instance = await startEmbedded()
  t.teardown(() => instance.close())
  const { issue, agent, squad } = await demo(instance)
  t.equal(issue.status, 'in_progress')
  t.equal(issue.checkoutAgentId, agent.id)
  t.equal(issue.identifier, `${squad.issuePrefix}-1`)
  const res = await instance.app.inject({ method: 'GET', url: `/api/issues/${issue.id}`, headers: { authorization: 'Bearer slaw_op_embedded_example_key' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().issue.assigneeAgentId, agent.id)
})
