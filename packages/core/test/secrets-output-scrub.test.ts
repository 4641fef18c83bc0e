import t from 'tap'
import { processAdapter } from '@slaw/adapters'
import { eachBackend } from './helpers/instance.js'
import { finished } from './helpers/runs.js'

// An agent that prints a bound secret (plainly, and as JSON) and its run token, then fails: the
// run's outputTail, error and every response reading it must hold none of them (docs/secrets.md:
// no response holds a value).
const value = 'bound-"quoted"-value-7f3a91\\x'

eachBackend(
  t,
  'a bound secret value an agent prints never reaches the stored output tail or error',
  async (t, api) => {
    const squad = (await api.call('POST', '/api/squads', { name: 'Printer' })).body.squad
    const secret = (await api.call('POST', `/api/squads/${squad.id}/secrets`, { name: 'db password', value })).body.secret
    const print = [
      "console.log('password is ' + process.env.DB_PASSWORD)",
      'console.log(JSON.stringify({ env: { DB_PASSWORD: process.env.DB_PASSWORD } }))',
      "console.error('token ' + process.env.SVC_API_KEY)",
      "console.log('plain stays ' + process.env.PLAIN_SETTING)",
      'process.exit(3)',
    ].join(';')
    const agent = (
      await api.call('POST', `/api/squads/${squad.id}/agents`, {
        name: 'printer',
        role: 'general',
        adapterType: 'process',
        adapterConfig: {
          command: process.execPath,
          args: ['-e', print],
          timeoutSec: 60,
          env: { DB_PASSWORD: { type: 'secret_ref', secretId: secret.id, version: 'latest' }, PLAIN_SETTING: 'visible-setting' },
        },
      })
    ).body.agent
    const woken = await api.call('POST', `/api/agents/${agent.id}/wake`, {})
    t.equal(woken.status, 202, 'the wake is queued')
    const run = await finished(api.call, woken.body.run.id)
    t.equal(run.status, 'failed')
    t.match(run.outputTail, /password is \[REDACTED\]/, 'the printed value is replaced')
    t.match(run.outputTail, /"DB_PASSWORD":"\[REDACTED\]"/, 'its JSON-escaped form too')
    t.match(run.outputTail, /token \[REDACTED\]/, 'and the run token')
    t.match(run.outputTail, /plain stays visible-setting/, 'plain bindings are left alone')
    const everything = JSON.stringify([run, (await api.call('GET', `/api/agents/${agent.id}/runs`)).body, (await api.call('GET', `/api/issues?squadId=${squad.id}`)).body])
    t.notOk(everything.includes('7f3a91'), 'no response holds the value')
  },
  () => ({ adapters: [processAdapter()] }),
)

// The live output arrives in chunks: a value the agent writes in two pieces, with a pause between
// them, reaches the live stream as [REDACTED] too, and the output around it is not lost.
eachBackend(
  t,
  'a bound secret value cut across two live output chunks is scrubbed from the live stream',
  async (t, api) => {
    const squad = (await api.call('POST', '/api/squads', { name: 'Splitter' })).body.squad
    const secret = (await api.call('POST', `/api/squads/${squad.id}/secrets`, { name: 'api token', value: 'split-secret-9c41e7' })).body.secret
    const print = [
      'const v = process.env.API_TOKEN',
      "process.stdout.write('before ' + v.slice(0, 9))",
      "setTimeout(() => { process.stdout.write(v.slice(9) + ' after'); process.stdout.write('\\ntail') }, 300)",
    ].join(';')
    const agent = (
      await api.call('POST', `/api/squads/${squad.id}/agents`, {
        name: 'splitter',
        role: 'general',
        adapterType: 'process',
        adapterConfig: { command: process.execPath, args: ['-e', print], timeoutSec: 60, env: { API_TOKEN: { type: 'secret_ref', secretId: secret.id, version: 'latest' } } },
      })
    ).body.agent
    const chunks: string[] = []
    const off = api.instance.services.runs.engine.onRunOutput((event) => {
      if (event.agentId === agent.id && event.stream === 'stdout') chunks.push(event.text)
    })
    t.teardown(off)
    const woken = await api.call('POST', `/api/agents/${agent.id}/wake`, {})
    const run = await finished(api.call, woken.body.run.id)
    t.equal(run.status, 'succeeded')
    const live = chunks.join('')
    t.equal(live, 'before [REDACTED] after\ntail', 'the live stream shows the value redacted and everything around it')
    t.ok(chunks.length >= 2, `it still arrived live, in pieces (${chunks.length})`)
    t.notOk(
      chunks.some((c) => c.includes('split-secr')),
      'no chunk carries the start of the value',
    )
    t.match(run.outputTail, /before \[REDACTED\] after/, 'the stored tail too')
  },
  () => ({ adapters: [processAdapter()] }),
)
