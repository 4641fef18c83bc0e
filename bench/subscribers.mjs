#!/usr/bin/env node
// Live-event subscribers beside another benchmark, so that a run measures slaw with its live views
// open, as an operator's console keeps them: every squad the server has gets SUBSCRIBERS_PER_SQUAD
// streams of `GET /api/squads/{id}/events` (Server-Sent Events), opened as squads appear and again
// after the server restarts, read to the end and discarded. At exit (Ctrl-C, SIGTERM, or
// SUBSCRIBERS_SECONDS) it prints how many streams were opened and how many events they carried.
//
//   SVC_OPERATOR_KEY=... node bench/subscribers.mjs [--url http://127.0.0.1:3300]
//
// With the side-by-side harness: give the server the same SVC_OPERATOR_KEY (the harness passes it
// through) and start this first; it waits for the server. --smoke (or BENCH_SMOKE=1): starts its
// own server on PGlite memory://, opens the streams, makes a change, checks that every stream saw
// it, and stops.
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { api, freePort, operatorKey, smoke, startSlaw } from './lib.mjs'

const { values } = parseArgs({ options: { url: { type: 'string', default: 'http://127.0.0.1:3300' }, smoke: { type: 'boolean' } } })
const perSquad = Number(process.env.SUBSCRIBERS_PER_SQUAD ?? 2)
const key = smoke ? operatorKey : process.env.SVC_OPERATOR_KEY
if (!key) {
  console.error('subscribers: set SVC_OPERATOR_KEY to the server operator key')
  process.exit(2)
}
const stats = { opened: 0, events: 0, open: 0 }
const streams = new Map() // squad id -> open stream count

/** One stream for a squad, read until it ends (the server stops or restarts). */
async function subscribe(base, squadId, seen) {
  streams.set(squadId, (streams.get(squadId) ?? 0) + 1)
  stats.opened++
  stats.open++
  try {
    const res = await fetch(`${base}/api/squads/${squadId}/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } })
    if (res.status !== 200) throw new Error(`events stream answered ${res.status}`)
    const decoder = new TextDecoder()
    for await (const chunk of res.body) {
      for (const line of decoder.decode(chunk, { stream: true }).split('\n')) {
        if (!line.startsWith('event:')) continue
        stats.events++
        seen?.(line.slice(6).trim())
      }
    }
  } catch {
    // the server went away: the squad is subscribed again when it answers
  } finally {
    stats.open--
    streams.set(squadId, streams.get(squadId) - 1)
  }
}

/** Subscribes every squad the server lists, as they appear, until `until` resolves. */
async function follow(base, until, seen) {
  let done = false
  until.then(() => (done = true))
  while (!done) {
    try {
      const res = await fetch(`${base}/api/squads?limit=200`, { headers: { authorization: `Bearer ${key}` } })
      if (res.ok) {
        const body = await res.json()
        for (const squad of body.squads) for (let i = streams.get(squad.id) ?? 0; i < perSquad; i++) subscribe(base, squad.id, seen)
      }
    } catch {
      // not up yet, or restarting
    }
    await sleep(500)
  }
}

const report = () => console.log(`RESULT subscribers per_squad=${perSquad} streams_opened=${stats.opened} streams_open=${stats.open} events=${stats.events}`)

if (smoke) {
  const server = await startSlaw({ port: await freePort(), env: { SVC_DATA_DIR: 'memory://', DATABASE_URL: '' } })
  try {
    const { squad } = await api(server.base, 'POST', '/api/squads', { name: 'Subscribed' })
    const seen = []
    let stop
    const following = follow(server.base, new Promise((r) => (stop = r)), (type) => seen.push(type))
    while (stats.open < perSquad) await sleep(50)
    await api(server.base, 'POST', `/api/squads/${squad.id}/issues`, { title: 'Seen live' })
    const deadline = Date.now() + 10_000
    while (seen.filter((t) => t.startsWith('issue.')).length < perSquad && Date.now() < deadline) await sleep(50)
    stop()
    await following
    const got = seen.filter((t) => t.startsWith('issue.')).length
    report()
    if (got < perSquad) throw new Error(`each of ${perSquad} streams should have seen the new issue; ${got} did`)
  } finally {
    await server.stop()
  }
  process.exit(0)
}

const seconds = Number(process.env.SUBSCRIBERS_SECONDS ?? 0)
const ended = new Promise((resolve) => {
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, resolve)
  if (seconds > 0) setTimeout(resolve, seconds * 1000)
})
await follow(values.url, ended)
report()
process.exit(0)
