// The baseline: a bare fastify route returning exactly the JSON slaw returned for the same path.
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'

const bodies = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const app = Fastify({ logger: false })
for (const [path, body] of Object.entries(bodies)) app.get(path, async (_req, reply) => reply.type('application/json').send(body))
await app.listen({ port: Number(process.argv[3]), host: '127.0.0.1' })
process.send?.('ready')
