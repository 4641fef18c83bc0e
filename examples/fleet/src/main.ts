// A fleet in one process: a reference control tower and two instances reporting to it over HTTP.
// In production each runs on its own (`slaw tower`, and `slaw start` with SVC_TOWER_URL set).
import { pathToFileURL } from 'node:url'
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { processAdapter } from '@slaw/adapters'
import { createTower, type Tower } from '@slaw/tower'
import { towerClient } from '@slaw/tower-client'

export const adminKey = 'fleet-example-admin-key'
export const operatorKey = 'slaw_op_fleet_example_key'

export interface Fleet {
  tower: Tower
  towerUrl: string
  instances: Array<{ name: string; instance: SlawInstance; url: string }>
  close(): Promise<void>
}

/** A tower that approves every enrollment, and two instances (one hiding issue titles) reporting to it. */
export async function startFleet(): Promise<Fleet> {
  const tower = await createTower({ dataDir: 'memory://', adminKey, autoApprove: true })
  const towerUrl = await tower.listen({ port: 0 })
  const instances: Fleet['instances'] = []
  for (const [name, reportIssueTitles] of [
    ['alpha', true],
    ['beta', false],
  ] as const) {
    const instance = await createInstance({
      storage: await pgliteStorage({ dataDir: 'memory://' }),
      adapters: [processAdapter()],
      operatorKey,
      // Short cadences for the demo; the defaults are a heartbeat a minute and a sync every 30 s.
      tower: towerClient({ url: towerUrl, instanceId: `fleet-${name}`, heartbeatSec: 5, syncSec: 1, reportIssueTitles }),
    })
    const url = await instance.listen({ port: 0 })
    instances.push({ name, instance, url })
  }
  return {
    tower,
    towerUrl,
    instances,
    async close() {
      for (const { instance } of instances) await instance.close()
      await tower.close()
    },
  }
}

async function call(base: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text ? JSON.parse(text) : undefined
}

/** Some work on each instance, then what the tower knows about the fleet. */
export async function demo(fleet: Fleet) {
  for (const { name, url } of fleet.instances) {
    // Enforce mode: the API answers once the tower approved the instance (at once here).
    for (let i = 0; ; i++) {
      const { tower } = await call(url, operatorKey, 'GET', '/api/tower')
      if (tower.state === 'connected') break
      if (i > 200) throw new Error(`${name} did not enroll: ${JSON.stringify(tower)}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    const { squad } = await call(url, operatorKey, 'POST', '/api/squads', { name: `Squad ${name}` })
    const { agent } = await call(url, operatorKey, 'POST', `/api/squads/${squad.id}/agents`, {
      name: 'ada',
      role: 'software_engineer',
      adapterType: 'process',
      adapterConfig: { command: process.execPath, args: ['-e', 'console.log(`woken: ${process.env.SVC_RUN_ID}`)'] },
    })
    await call(url, operatorKey, 'POST', `/api/squads/${squad.id}/issues`, { title: `Plan the ${name} launch`, description: 'Stays on the instance.' })
    await call(url, operatorKey, 'POST', `/api/squads/${squad.id}/cost-events`, { agentId: agent.id, model: 'some-model', inputTokens: 1200, outputTokens: 300, costCents: 42 })
    // Send now rather than at the next tick.
    await call(url, operatorKey, 'POST', '/api/tower/sync')
  }
  const admin = (path: string) => call(fleet.towerUrl, adminKey, 'GET', `/api/admin${path}`)
  const { items } = await admin('/instances')
  const fleetView = []
  for (const i of items) {
    const issues = await admin(`/instances/${i.id}/issues`)
    const costs = await admin(`/instances/${i.id}/cost-events`)
    fleetView.push({
      instanceId: i.instanceId as string,
      state: i.state as string,
      issueTitles: issues.items.map((x: any) => x.data.title as string),
      costCents: costs.items.reduce((sum: number, x: any) => sum + x.data.costCents, 0) as number,
    })
  }
  return fleetView.sort((a, b) => a.instanceId.localeCompare(b.instanceId))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const fleet = await startFleet()
  console.log(`tower at ${fleet.towerUrl}; instances at ${fleet.instances.map((i) => i.url).join(', ')}`)
  console.table(await demo(fleet))
  await fleet.close()
}
