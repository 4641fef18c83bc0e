import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nodeEntry } from '../../../scripts/node-entry.js'
import { watchStart } from './helpers/listening.js'

const nodeArgs = nodeEntry(new URL('../src/bin.ts', import.meta.url))
const operatorKey = 'slaw_op_cli_skills_dir_key_0000'

t.test('slaw start: SVC_SKILLS_DIR confines skill imports; the agent routine quota comes from the env', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slaw-cli-skills-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'review.md'), '---\nname: review\n---\n# Review\n')
  const child = spawn(process.execPath, [...nodeArgs, 'start', '--port', '0'], {
    env: { ...process.env, LOG_LEVEL: 'warn', SVC_DATA_DIR: 'memory://', SVC_OPERATOR_KEY: operatorKey, SVC_SKILLS_DIR: dir, SVC_MAX_AGENT_ROUTINES_PER_SQUAD: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => {
    child.kill('SIGTERM')
  })
  const port = await watchStart(child).ready
  const call = async (method: string, path: string, body: unknown, token = operatorKey) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as any }
  }
  const squad = (await call('POST', '/api/squads', { name: 'CLI skills' })).body.squad
  const inside = await call('POST', `/api/squads/${squad.id}/skills/import`, { source: join(dir, 'review.md') })
  t.equal(inside.status, 201, JSON.stringify(inside.body))
  const outside = await call('POST', `/api/squads/${squad.id}/skills/import`, { source: '/etc/hostname' })
  t.equal(outside.status, 403)
  t.equal(outside.body.code, 'skill_source_refused')

  const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: 'ada', role: 'general', adapterType: 'process' })).body.agent
  const token = (await call('POST', `/api/agents/${agent.id}/keys`, { name: 'k' })).body.token
  t.equal((await call('POST', `/api/squads/${squad.id}/routines`, { title: 'one' }, token)).status, 201)
  const second = await call('POST', `/api/squads/${squad.id}/routines`, { title: 'two' }, token)
  t.equal(second.status, 429, 'SVC_MAX_AGENT_ROUTINES_PER_SQUAD=1')
  t.equal(second.body.code, 'routine_quota_exceeded')
})
