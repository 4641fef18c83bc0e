import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { clearSessionCookie, readCookie, sameOriginOrSafe, sessionCookie } from '@slaw/core'
import type { TowerDb } from '../db/database.js'
import { TowerError } from '../errors.js'
import type { ConsoleSessions } from '../services/console-sessions.js'
import type { TowerServices } from '../services/index.js'
import type { InstanceView } from '../services/fleet.js'
import { errorResponses } from '../schemas/common.js'
import { fleetCss, fleetJs } from './fleet-page-assets.js'

/** The fleet page's session cookie; its own name, so an instance's console on the same host keeps its own. */
const towerSessionCookie = 'slaw_tower_session'

/** Headers of every page: nothing but this origin, no inline script or style, never framed. */
const pageHeaders = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'content-type': 'text/html; charset=utf-8',
}

const escapeHtml = (value: unknown): string => String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

const money = (cents: number | undefined): string => (cents === undefined ? '—' : `$${(cents / 100).toFixed(2)}`)

function ago(iso: string | null, now: Date): string {
  if (!iso) return 'never'
  const sec = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000))
  if (sec < 60) return `${sec} s ago`
  if (sec < 3600) return `${Math.floor(sec / 60)} min ago`
  if (sec < 86_400) return `${Math.floor(sec / 3600)} h ago`
  return `${Math.floor(sec / 86_400)} d ago`
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/fleet.css">
<script src="/fleet.js" defer></script>
</head>
<body>
${body}
</body>
</html>
`
}

function signInPage(): string {
  return page(
    'Sign in · slaw tower',
    `<main>
<form id="sign-in" class="sign-in" aria-labelledby="sign-in-title">
<h1 id="sign-in-title">slaw tower</h1>
<p class="muted">Sign in with the tower's admin key to see the fleet.</p>
<label for="admin-key">Admin key</label>
<input id="admin-key" name="adminKey" type="password" autocomplete="current-password" required>
<button type="submit" class="primary">Sign in</button>
<p id="status" role="status" aria-live="polite"></p>
</form>
</main>`,
  )
}

interface Pending {
  id: string
  createdAt: string
  instance: { hostname: string; instanceId: string; machineId: string; os: string; slawVersion: string }
}

/** A squad's name, with its status when it is not active. */
function squadName(s: { name: string; status: string }): string {
  return `${escapeHtml(s.name)}${s.status && s.status !== 'active' ? ` <span class="muted">(${escapeHtml(s.status)})</span>` : ''}`
}

function fleetPage(instances: InstanceView[], squads: Map<string, { name: string; status: string }[]>, pending: Pending[], now: Date): string {
  const instanceCards = instances.length
    ? instances
        .map((i) => {
          const own = squads.get(i.id) ?? []
          const label = `${i.hostname} (${i.instanceId})`
          return `<li class="card" aria-label="${escapeHtml(label)}">
<h3>${escapeHtml(i.hostname)} <span class="badge ${i.online ? 'online' : 'offline'}">${i.online ? 'online' : 'offline'}</span></h3>
<dl>
<dt>Instance</dt><dd>${escapeHtml(i.instanceId)}</dd>
<dt>Last seen</dt><dd>${i.lastSeenAt ? `<time datetime="${escapeHtml(i.lastSeenAt)}">${escapeHtml(ago(i.lastSeenAt, now))}</time>` : 'never'}</dd>
<dt>Version</dt><dd>${escapeHtml(i.slawVersion)}</dd>
<dt>Enrollment</dt><dd>${escapeHtml(i.state ?? 'none')}</dd>
<dt>Spend today</dt><dd>${money(i.spend?.todayCents)}</dd>
<dt>Month to date</dt><dd>${money(i.spend?.monthCents)}</dd>
<dt>Squads</dt><dd>${own.length ? own.map(squadName).join(', ') : '<span class="muted">none synced</span>'}</dd>
</dl>
</li>`
        })
        .join('\n')
    : ''
  const pendingCards = pending
    .map((e) => {
      const who = `${e.instance.hostname} (${e.instance.instanceId})`
      return `<li class="card" aria-label="Enrollment of ${escapeHtml(who)}">
<h3>${escapeHtml(e.instance.hostname)}</h3>
<dl>
<dt>Instance</dt><dd>${escapeHtml(e.instance.instanceId)}</dd>
<dt>Machine</dt><dd>${escapeHtml(e.instance.machineId)}</dd>
<dt>OS</dt><dd>${escapeHtml(e.instance.os)}</dd>
<dt>Version</dt><dd>${escapeHtml(e.instance.slawVersion)}</dd>
<dt>Asked</dt><dd><time datetime="${escapeHtml(e.createdAt)}">${escapeHtml(ago(e.createdAt, now))}</time></dd>
</dl>
<div class="actions">
<button type="button" class="primary" data-action="approve" data-id="${escapeHtml(e.id)}" aria-label="Approve ${escapeHtml(who)}">Approve</button>
<button type="button" class="danger" data-action="reject" data-id="${escapeHtml(e.id)}" aria-label="Reject ${escapeHtml(who)}">Reject</button>
</div>
</li>`
    })
    .join('\n')
  const online = instances.filter((i) => i.online).length
  return page(
    'Fleet · slaw tower',
    `<header>
<h1>slaw tower · fleet</h1>
<button type="button" data-action="sign-out">Sign out</button>
</header>
<main>
<p id="status" role="status" aria-live="polite"></p>
<section aria-labelledby="pending-title">
<h2 id="pending-title">Pending enrollments (${pending.length})</h2>
${pending.length ? `<ul class="cards">\n${pendingCards}\n</ul>` : '<p class="muted">No enrollment is waiting for a decision.</p>'}
</section>
<section aria-labelledby="instances-title">
<h2 id="instances-title">Instances (${instances.length}, ${online} online)</h2>
${instances.length ? `<ul class="cards">\n${instanceCards}\n</ul>` : '<p class="muted">No instance has enrolled yet.</p>'}
</section>
</main>`,
  )
}

export interface FleetPageOptions {
  services: TowerServices
  sessions: ConsoleSessions
  db: TowerDb
}

/** The session cookie's token, when the request carries one and no Authorization header. */
export function sessionToken(request: FastifyRequest): string | undefined {
  if (request.headers.authorization !== undefined) return undefined
  return readCookie(request.headers.cookie, towerSessionCookie)
}

/**
 * The fleet page at `/` (read-only, server-rendered; docs/tower.md): instances with status, last
 * seen, version, spend and squads, and pending enrollments with Approve and Reject. Signed in with
 * the admin key through `POST /api/console/session`; the page's script calls the admin API with
 * the session cookie.
 */
export function fleetPageRoutes(opts: FleetPageOptions) {
  const { services, sessions, db } = opts
  return async (app: FastifyInstance) => {
    const errors = errorResponses(400, 401, 429)
    const Session = Type.Object({ session: Type.Object({ expiresAt: Type.String({ format: 'date-time' }) }) })

    app.post(
      '/api/console/session',
      { schema: { body: Type.Object({ adminKey: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false }), response: { 200: Session, ...errors } } },
      async (request, reply) => {
        const { token, expiresAt, maxAgeSec } = await sessions.signIn((request.body as { adminKey: string }).adminKey)
        void reply.header('set-cookie', sessionCookie(request, token, maxAgeSec, towerSessionCookie)).header('cache-control', 'no-store')
        return { session: { expiresAt: expiresAt.toISOString() } }
      },
    )
    app.get('/api/console/session', { schema: { response: { 200: Session, ...errors } } }, async (request) => {
      const token = sessionToken(request)
      const expiresAt = token ? await sessions.check(token) : undefined
      if (!expiresAt) throw new TowerError('unauthorized', 'Not signed in.')
      return { session: { expiresAt: expiresAt.toISOString() } }
    })
    app.delete('/api/console/session', async (request, reply) => {
      const token = sessionToken(request)
      if (token) {
        if (!sameOriginOrSafe(request)) throw crossSite()
        await sessions.signOut(token)
      }
      void reply.header('set-cookie', clearSessionCookie(request, towerSessionCookie))
      return { ok: true }
    })

    app.get('/fleet.css', async (_request, reply) => reply.headers({ 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' }).send(fleetCss))
    app.get('/fleet.js', async (_request, reply) => reply.headers({ 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' }).send(fleetJs))

    app.get('/', async (request, reply: FastifyReply) => {
      const token = readCookie(request.headers.cookie, towerSessionCookie)
      const signedIn = token ? await sessions.check(token) : undefined
      if (!signedIn) {
        if (token) void reply.header('set-cookie', clearSessionCookie(request, towerSessionCookie))
        return reply.headers(pageHeaders).send(signInPage())
      }
      const [instances, pending] = await Promise.all([services.fleet.list({ limit: 500 }), services.enrollments.list({ state: 'pending', limit: 500 })])
      const ids = instances.items.map((i) => i.id)
      const rows = ids.length ? await db.selectFrom('tower_entities').select(['instance_pk', 'data']).where('type', '=', 'squad').where('instance_pk', 'in', ids).orderBy('local_id').execute() : []
      const squads = new Map<string, { name: string; status: string }[]>()
      for (const row of rows) {
        const data = row.data as unknown as { name?: string; status?: string }
        const list = squads.get(row.instance_pk) ?? []
        list.push({ name: String(data.name ?? ''), status: String(data.status ?? '') })
        squads.set(row.instance_pk, list)
      }
      // An identity whose first enrollment waits is shown under pending enrollments only.
      const known = instances.items.filter((i) => i.state !== 'pending')
      return reply.headers(pageHeaders).send(fleetPage(known, squads, pending.items, new Date()))
    })
  }
}

/** 403 for a cookie-authenticated mutation from another origin (core's rule, docs/console.md). */
export const crossSite = (): TowerError => new TowerError('forbidden', "Cross-site request refused: a request that changes something must carry an Origin header equal to this tower's origin.")
