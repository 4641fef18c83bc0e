import type { TowerDb } from '../db/database.js'
import { autoApproveRules, type AutoApproveRuleInput } from './auto-approve.js'
import { directives } from './directives.js'
import { enrollments } from './enrollment.js'
import { fleet } from './fleet.js'
import { ingest } from './ingest.js'
import { limits } from './limits.js'
import { skills } from './skills.js'

export interface ServicesOptions {
  enrollmentSecret?: string | undefined
  autoApprove: AutoApproveRuleInput[]
  /** The clock heartbeats are timed by. Default: the system clock. */
  now?: (() => Date) | undefined
}

/** The tower's domain services: usable without HTTP (the routes only parse and shape). */
export function createServices(db: TowerDb, options: ServicesOptions) {
  const rules = autoApproveRules(db, options.autoApprove)
  const directiveService = directives(db)
  return {
    rules,
    enrollments: enrollments(db, rules, { enrollmentSecret: options.enrollmentSecret }),
    directives: directiveService,
    ingest: ingest(db, directiveService, options.now),
    limits: limits(db),
    skills: skills(db),
    fleet: fleet(db),
  }
}
export type TowerServices = ReturnType<typeof createServices>
