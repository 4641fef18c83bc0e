// An instance embedded in a host application: PGlite in memory, services called directly and over HTTP.
import { createInstance, systemActor, type SlawInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { processAdapter } from '@slaw/adapters'
import { pathToFileURL } from 'node:url'

export async function startEmbedded(operatorKey = 'slaw_op_embedded_example_key'): Promise<SlawInstance> {
  return createInstance({
    storage: await pgliteStorage({ dataDir: 'memory://' }),
    adapters: [processAdapter()],
    operatorKey,
  })
}

/** The core loop without HTTP: a squad, an agent (a process agent: the command slaw starts to wake it), an issue, a checkout. */
export async function demo(instance: SlawInstance) {
  const me = systemActor('embedded-example')
  const { squads, agents, issues } = instance.services
  const squad = await squads.create(me, { name: 'Embedded' })
  const ada = await agents.create(me, squad.id, {
    name: 'ada',
    role: 'software_engineer',
    adapterType: 'process',
    adapterConfig: { command: process.execPath, args: ['-e', 'console.log(`woken: ${process.env.SVC_RUN_ID}`)'] },
  })
  const issue = await issues.create(me, squad.id, { title: 'Write the release notes', priority: 'high' })
  const checkedOut = await issues.checkout(me, issue.id, { agentId: ada.id })
  return { squad, agent: ada, issue: checkedOut }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const instance = await startEmbedded()
  const { issue } = await demo(instance)
  const res = await instance.app.inject({ method: 'GET', url: `/api/issues/${issue.id}`, headers: { authorization: 'Bearer slaw_op_embedded_example_key' } })
  console.log(res.statusCode, JSON.parse(res.body).issue.identifier, JSON.parse(res.body).issue.status)
  await instance.close()
}
