import t from 'tap'
import { Writable } from 'node:stream'
import pino from 'pino'
import { createInstance, type InstanceOptions } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { scrubUrl } from '../src/logging.js'
import { lazyRequestLogger } from '../src/http/request-logger.js'

const operator = 'slaw_op_log_secrets_test_key_0001'

async function logsOf(
  logger: InstanceOptions['logger'],
  lines: () => string,
  fn: (inject: (url: string, headers?: Record<string, string>) => Promise<number>, log: pino.Logger) => Promise<void>,
): Promise<string> {
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey: operator, logger, jobs: false, masterKey: 'a'.repeat(64) })
  try {
    await fn(async (url, headers = {}) => (await instance.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${operator}`, ...headers } })).statusCode, instance.log)
  } finally {
    await instance.close()
  }
  return lines()
}

t.test('scrubUrl', async (t) => {
  t.equal(scrubUrl('/api/x'), '/api/x')
  t.equal(
    scrubUrl('/api/x?token=abc&limit=5&apiKey=k1&KEY=k2&api_key=k3&secret=s&access_token=a&q=token'),
    '/api/x?token=[REDACTED]&limit=5&apiKey=[REDACTED]&KEY=[REDACTED]&api_key=[REDACTED]&secret=[REDACTED]&access_token=[REDACTED]&q=token',
  )
  t.equal(scrubUrl('/api/x?to%6Ben=abc'), '/api/x?to%6Ben=[REDACTED]', 'percent-encoded names too')
})

t.test('request lines never carry query-string credentials or the Authorization header', async (t) => {
  const secrets = ['tok_SECRET_1', 'SECRET_2', 'SECRET_3', operator]
  const check = (out: string, label: string) => {
    t.match(out, /"url":"\/api\/squads\?token=\[REDACTED\]&apiKey=\[REDACTED\]&secret=\[REDACTED\]&limit=5"/, `${label}: the URL is logged, scrubbed`)
    for (const s of secrets) t.notOk(out.includes(s), `${label}: ${s.slice(0, 8)}… is not in the log`)
  }
  // slaw's own logger (pino options).
  let own = ''
  const out1 = await logsOf(
    { level: 'debug', hooks: { streamWrite: (s: string) => ((own += s), '') } } as never,
    () => own,
    async (inject, log) => {
      t.equal(await inject('/api/squads?token=tok_SECRET_1&apiKey=SECRET_2&secret=SECRET_3&limit=5'), 200)
      log.info({ headers: { authorization: `Bearer ${operator}` }, authorization: `Bearer ${operator}` }, 'something that logs headers')
    },
  )
  check(out1, 'built-in logger')
  t.match(out1, /"authorization":"\[REDACTED\]"/)
  // A logger of the caller's.
  let theirs = ''
  const stream = new Writable({ write: (c, _e, cb) => ((theirs += c), cb()) })
  const out2 = await logsOf(
    pino({ level: 'debug' }, stream),
    () => theirs,
    async (inject) => {
      t.equal(await inject('/api/squads?token=tok_SECRET_1&apiKey=SECRET_2&secret=SECRET_3&limit=5'), 200)
    },
  )
  check(out2, 'caller logger')
})

t.test('request lines are debug: a server logging at info writes none per request', async (t) => {
  let out = ''
  await logsOf(
    { level: 'info', hooks: { streamWrite: (s: string) => ((out += s), '') } } as never,
    () => out,
    async (inject) => {
      t.equal(await inject('/api/squads'), 200)
      t.equal(await inject('/api/squads/not-a-uuid'), 404)
    },
  )
  t.notOk(out.includes('request completed') || out.includes('incoming request'), 'no access lines at info')
  let debug = ''
  await logsOf(
    { level: 'debug', hooks: { streamWrite: (s: string) => ((debug += s), '') } } as never,
    () => debug,
    async (inject) => {
      t.equal(await inject('/api/squads'), 200)
    },
  )
  const line = debug.split('\n').find((l) => l.includes('request completed'))
  t.ok(line, 'one access line per request at debug')
  t.match(JSON.parse(line!), { level: 20, reqId: String, req: { method: 'GET', url: '/api/squads' }, res: { statusCode: 200 }, responseTime: Number })
  t.equal(debug.split('\n').filter((l) => l.includes('request completed')).length, 1)
})

t.test("a request's logger becomes pino's child on its first line at an enabled level", async (t) => {
  let out = ''
  const parent = pino({ level: 'info', redact: ['*.token'] }, new Writable({ write: (c, _e, cb) => ((out += c), cb()) }))
  let children = 0
  const child = parent.child as unknown as (this: unknown, b: pino.Bindings, o?: pino.ChildLoggerOptions) => pino.Logger
  parent.child = function (this: unknown, b: pino.Bindings, o?: pino.ChildLoggerOptions) {
    children++
    return child.call(this, b, o)
  } as unknown as typeof parent.child
  const log = lazyRequestLogger(parent, { reqId: 'req-1' }, {})
  log.debug('not at info')
  log.trace('nor this')
  t.equal(children, 0, 'nothing written: no child made')
  t.equal(out, '')
  t.equal(log.level, 'info', "the level is the parent's")
  log.warn({ body: { token: 'tok_SECRET' } }, 'written')
  t.equal(children, 1, 'made on the first line written')
  const first = JSON.parse(out.trim())
  t.match(first, { level: 40, reqId: 'req-1', msg: 'written', body: { token: '[Redacted]' } }, 'with the request id, redacted as before')
  log.error('again')
  t.equal(children, 1, 'made once')
  log.level = 'debug'
  log.debug('now at debug')
  t.match(JSON.parse(out.trim().split('\n').pop()!), { level: 20, reqId: 'req-1', msg: 'now at debug' }, 'a level set on it applies to it')
  t.equal(parent.level, 'info', 'and not to the parent')
  log.child({ sub: 1 }).warn('from a child')
  t.match(JSON.parse(out.trim().split('\n').pop()!), { reqId: 'req-1', sub: 1, msg: 'from a child' }, 'its children carry its bindings')
  // A route-level log level makes the child at once (pino must apply the level).
  const before = children
  const eager = lazyRequestLogger(parent, { reqId: 'req-2' }, { level: 'debug' })
  t.equal(children, before + 1, 'eager when a level is given')
  t.equal(eager.level, 'debug')
})

t.test('a public trigger fire URL is logged with its id redacted (for signingMode none the id is the whole credential)', async (t) => {
  t.equal(scrubUrl('/api/routine-triggers/public/rtp_abcdefABCDEF0123456789abcdefABCD/fire'), '/api/routine-triggers/public/[REDACTED]/fire')
  t.equal(scrubUrl('/api/routine-triggers/public/rtp_x/fire?token=t'), '/api/routine-triggers/public/[REDACTED]/fire?token=[REDACTED]')
  let out = ''
  let publicId = ''
  const instance = await createInstance({
    storage: await pgliteStorage({ dataDir: 'memory://' }),
    operatorKey: operator,
    jobs: false,
    masterKey: 'a'.repeat(64),
    adapters: [{ type: 'process', wake: async () => ({ status: 'succeeded' }) }],
    logger: { level: 'debug', hooks: { streamWrite: (s: string) => ((out += s), '') } } as never,
  })
  try {
    const call = async (method: string, url: string, body?: unknown, auth = true) => {
      const res = await instance.app.inject({ method: method as 'POST', url, headers: auth ? { authorization: `Bearer ${operator}` } : {}, ...(body ? { payload: body as object } : {}) })
      return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined }
    }
    const squad = (await call('POST', '/api/squads', { name: 'Hooks' })).body.squad
    const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: 'ada', role: 'engineer', adapterType: 'process' })).body.agent
    const routine = (await call('POST', `/api/squads/${squad.id}/routines`, { title: 'Nightly', assigneeAgentId: agent.id })).body.routine
    const trigger = (await call('POST', `/api/routines/${routine.id}/triggers`, { kind: 'webhook', signingMode: 'none' })).body.trigger
    publicId = trigger.publicId
    t.match(publicId, /^rtp_/)
    const fired = await call('POST', `/api/routine-triggers/public/${publicId}/fire`, { hello: 'world' }, false)
    t.ok(fired.status < 300, `the unsigned fire is accepted (${fired.status})`)
  } finally {
    await instance.close()
  }
  t.match(out, /"url":"\/api\/routine-triggers\/public\/\[REDACTED\]\/fire"/, 'the fire request line is there, redacted')
  t.notOk(out.includes(publicId.slice(4)), 'the public id appears in no log line')
})
