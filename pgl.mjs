import { PGlite } from '@electric-sql/pglite'
import { readFileSync, readdirSync } from 'node:fs'
const f = readdirSync('/tmp/slaw-pglite').filter(x=>x.endsWith('.tar.gz')).map(x=>'/tmp/slaw-pglite/'+x)
let t = performance.now()
const blob = new Blob([readFileSync(f[f.length-1])])
const pg = new PGlite({ loadDataDir: blob, postgresqlconf: ['shared_buffers = 16MB'] })
await pg.waitReady
console.log('load', performance.now() - t, process.memoryUsage().rss/1e6)
t = performance.now()
const pg2 = new PGlite()
await pg2.waitReady
console.log('fresh', performance.now() - t, process.memoryUsage().rss/1e6)
const r = await pg.query("show shared_buffers"); console.log(r.rows)
