import { randomBytes } from 'node:crypto'
import { createTower, type Tower, type TowerOptions } from './create-tower.js'

export interface StartedTower extends Tower {
  /** Where it listens, e.g. `http://127.0.0.1:3200`. */
  address: string
  /** Set when the admin key was generated (SVC_TOWER_ADMIN_KEY unset); printed once, never stored. */
  generatedAdminKey: string | null
}

/**
 * Starts a tower from the environment (the `slaw tower` command calls this):
 * `PORT` (default 3200), `HOST` (default 127.0.0.1), `DATABASE_URL` (PostgreSQL; otherwise PGlite in
 * `SVC_TOWER_DATA_DIR`, default `./.slaw-tower`, or `memory://`), `SVC_TOWER_ADMIN_KEY` (the admin
 * bearer token; when unset one is generated for this run and printed once), and
 * `SVC_TOWER_ENROLLMENT_SECRET` (optional pre-shared enrollment secret).
 */
export async function startTowerFromEnv(env: Record<string, string | undefined> = process.env, overrides: Partial<TowerOptions> & { print?: (line: string) => void } = {}): Promise<StartedTower> {
  const { print = (line: string) => process.stderr.write(`${line}\n`), ...rest } = overrides
  const port = env.PORT ? Number(env.PORT) : 3200
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`PORT must be a port number, got "${env.PORT}"`)
  const host = env.HOST || '127.0.0.1'
  let adminKey = env.SVC_TOWER_ADMIN_KEY || ''
  let generatedAdminKey: string | null = null
  if (!adminKey) {
    adminKey = `slaw_admin_${randomBytes(24).toString('base64url')}`
    generatedAdminKey = adminKey
  }
  const tower = await createTower({
    adminKey,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.SVC_TOWER_DATA_DIR || undefined,
    enrollmentSecret: env.SVC_TOWER_ENROLLMENT_SECRET || undefined,
    logger: true,
    ...rest,
  })
  let address: string
  try {
    address = await tower.listen({ port, host })
  } catch (err) {
    await tower.close()
    throw err
  }
  if (generatedAdminKey) {
    print(`slaw tower: SVC_TOWER_ADMIN_KEY is not set; the admin key for this run is ${generatedAdminKey}`)
    print('slaw tower: it is shown once and not stored; set SVC_TOWER_ADMIN_KEY to keep one across restarts.')
  }
  return Object.assign(tower, { address, generatedAdminKey })
}
