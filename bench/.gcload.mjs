import autocannon from 'autocannon'
const base = 'http://127.0.0.1:3499'
const op = { authorization: 'Bearer slaw_op_bench_operator_key_0123456789', 'content-type': 'application/json' }
const api = async (m, p, b) => (await fetch(base + p, { method: m, headers: op, body: JSON.stringify(b) })).json()
const { squad } = await api('POST', '/api/squads', { name: 'Tail' })
const { agent } = await api('POST', `/api/squads/${squad.id}/agents`, { name: 'tail', role: 'engineer', adapterType: 'process' })
const load = { url: `${base}/api/squads/${squad.id}/cost-events`, method: 'POST', headers: op, body: JSON.stringify({ agentId: agent.id, model: 'claude-sonnet-4-5', inputTokens: 1200, cachedInputTokens: 0, outputTokens: 300, costCents: 2 }), connections: Number(process.env.C ?? 4) }
await autocannon({ ...load, duration: 3 })
console.error('--- measured')
const r = await autocannon({ ...load, duration: 10 })
console.log(`client: ${r.requests.average} req/s, p50 ${r.latency.p50} p97.5 ${r.latency.p97_5} p99 ${r.latency.p99}`)
