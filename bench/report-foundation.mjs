// Renders bench/raw/results-foundation.json as the "Foundation" section of bench/RESULTS.md.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { root } from './lib.mjs'

const r = JSON.parse(readFileSync(join(root, 'bench/raw/results-foundation.json'), 'utf8'))
const lines = [
  '## Foundation (issue #2)',
  '',
  `${r.date.slice(0, 10)}, ${r.machine}. \`npm run build && node bench/foundation.mjs\`; PostgreSQL 15 and pgbench on the same machine; autocannon in the bench process, slaw and the bare server in their own processes; ${r.duration} s per run. Ratios compare runs made back to back in the same invocation.`,
  '',
  '| Run | slaw | baseline | ratio | target |',
  '|---|---|---|---|---|',
]
const target = (name) =>
  name.includes('GET /api/issues') || name.includes('inbox') ? '≥ 0.40 of bare fastify'
  : name.includes('POST issue') || name.includes('checkout') ? '≥ 0.50 of pgbench (PostgreSQL)'
  : name.includes('100,000') ? 'p50 < 15 ms, p99 < 60 ms'
  : name.includes('start') ? '< 1.5 s'
  : name.includes('memory') ? (name.startsWith('PGlite') ? '< 200 MB' : '< 100 MB') : ''
for (const [name, v] of Object.entries(r.runs)) {
  if (v.bareFastify) lines.push(`| ${name} | ${v.slaw.rps} req/s (p50 ${v.slaw.p50} ms, p99 ${v.slaw.p99} ms) | bare fastify ${v.bareFastify.rps} req/s | ${v.ratio} | ${target(name)} |`)
  else if (v.pgbench) lines.push(`| ${name} | ${v.slaw.rps} req/s (p50 ${v.slaw.p50} ms, p99 ${v.slaw.p99} ms, non-2xx ${v.slaw.non2xx}) | pgbench ${v.pgbench.tps} tps | ${v.ratio} | ${target(name)} |`)
  else if (v.medianMs !== undefined) lines.push(`| ${name} | median ${v.medianMs} ms (min ${v.minMs}, max ${v.maxMs}) | | | ${target(name)} |`)
  else if (v.rssMb !== undefined) lines.push(`| ${name} | ${v.rssMb} MB RSS after 3 s idle | | | ${target(name)} |`)
  else lines.push(`| ${name} | p50 ${v.p50} ms, p99 ${v.p99} ms (${v.rps} req/s, non-2xx ${v.non2xx}) | | | ${target(name)} |`)
}
const section = lines.join('\n') + '\n'
const file = join(root, 'bench/RESULTS.md')
const current = readFileSync(file, 'utf8')
const start = current.indexOf('## Foundation (issue #2)')
let next = start === -1 ? -1 : current.indexOf('\n## ', start + 5)
const updated = start === -1 ? current.replace('# Benchmark results\n', `# Benchmark results\n\n${section}`) : current.slice(0, start) + section + (next === -1 ? '' : current.slice(next + 1))
writeFileSync(file, updated)
console.log(section)
