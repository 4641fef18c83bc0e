// Benchmark for secrets (issue #11). Not a test: figures go to bench/RESULTS.md.
//
//   node bench/secrets.mjs [--smoke]
//
// Resolves one local_encrypted secret through the in-process resolver (services.secrets.resolve,
// what the run engine calls), one caller, BENCH_RESOLVES times (default 10,000) after a warm-up,
// on PostgreSQL at BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres; the script
// creates and drops the database slaw_bench_secrets). Each resolve reads the secret and version
// (one query), decrypts (AES-256-GCM) and writes the access event plus lastResolvedAt (one
// statement): two round trips, so the script also measures one bare round trip for comparison. Runs
// the TypeScript sources through tsx, so no build is needed. Writes bench/raw/results-secrets.json.
// --smoke: 50 resolves.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

if (!process.execArgv.some((a) => a.includes('slaw-source'))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=slaw-source', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}

const { createInstance, operatorActor } = await import('@slaw/core')
const { pgStorage } = await import('@slaw/storage-pg')
const { machine, freshDb, dropFreshDbs, size, writeResult } = await import('./lib.mjs')

const n = size('BENCH_RESOLVES', 10_000, 50)
const warmup = Math.min(500, n)

const url = await freshDb('slaw_bench_secrets')
const storage = pgStorage({ url, max: 4 })
const instance = await createInstance({ storage, operatorKey: 'slaw_op_bench_secrets_000000000', masterKey: '5a'.repeat(32), logger: false, jobs: false })
try {
  const op = operatorActor()
  const squad = await instance.services.squads.create(op, { name: 'Bench' })
  const secret = await instance.services.secrets.create(op, squad.id, { name: 'API token', value: 'x'.repeat(40) })
  const input = {
    squadId: squad.id,
    secretId: secret.id,
    version: 'latest',
    consumer: { type: 'routine', id: secret.id },
    configPath: 'env.API_TOKEN',
    actor: { type: 'system', id: 'bench' },
    heartbeatRunId: null,
    issueId: null,
  }
  for (let i = 0; i < warmup; i++) await instance.services.secrets.resolve(input)
  const times = new Float64Array(n)
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    const s = performance.now()
    await instance.services.secrets.resolve(input)
    times[i] = performance.now() - s
  }
  const total = performance.now() - t0
  times.sort()
  const q = (p) => times[Math.min(n - 1, Math.floor(p * n))]
  // The floor on this machine right now: one round trip (`select 1`), the same number of times.
  const pings = new Float64Array(Math.min(n, 2000))
  for (let i = 0; i < pings.length; i++) {
    const s = performance.now()
    await storage.ping()
    pings[i] = performance.now() - s
  }
  pings.sort()
  // Where the time goes: the read alone, and the access-event write (a commit) alone.
  const part = async (fn) => {
    const a = new Float64Array(Math.min(n, 2000))
    for (let i = 0; i < a.length; i++) {
      const s = performance.now()
      await fn()
      a[i] = performance.now() - s
    }
    a.sort()
    return +a[Math.floor(a.length / 2)].toFixed(3)
  }
  const readP50Ms = await part(() => storage.secrets.getForResolve(secret.id, 'latest'))
  const { uuidv7 } = await import('@slaw/core')
  const writeP50Ms = await part(() =>
    storage.secrets.recordAccess(
      {
        id: uuidv7(),
        secretId: secret.id,
        squadId: squad.id,
        version: 1,
        provider: 'local_encrypted',
        actorType: 'system',
        actorId: 'bench',
        consumerType: 'routine',
        consumerId: secret.id,
        configPath: 'env.X',
        issueId: null,
        heartbeatRunId: null,
        outcome: 'success',
        errorCode: null,
      },
      new Date(),
    ),
  )
  const result = {
    machine: machine(),
    date: new Date().toISOString(),
    resolves: n,
    p50Ms: +q(0.5).toFixed(3),
    p90Ms: +q(0.9).toFixed(3),
    p99Ms: +q(0.99).toFixed(3),
    meanMs: +(total / n).toFixed(3),
    perSecond: Math.round((n / total) * 1000),
    roundTripP50Ms: +pings[Math.floor(pings.length / 2)].toFixed(3),
    readP50Ms,
    accessEventWriteP50Ms: writeP50Ms,
    load: (await import('node:os')).loadavg().map((l) => +l.toFixed(2)),
  }
  console.log(JSON.stringify(result, null, 2))
  console.log('written', writeResult('results-secrets.json', result))
} finally {
  await instance.close()
  await dropFreshDbs()
}
