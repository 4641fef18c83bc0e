import { ActivityService } from './audit/activity.js'
import { AgentService } from './org/agents.js'
import { ApprovalService } from './governance/approvals.js'
import { AuthService } from './foundation/auth.js'
import { ConsoleSessionService } from './foundation/console-sessions.js'
import type { AuthFailureLimitOptions } from './foundation/auth-failures.js'
import { BudgetService } from './money/budgets.js'
import type { ServiceContext } from './foundation/context.js'
import { CostService } from './money/costs.js'
import { DashboardService } from './money/dashboard.js'
import { ExportService } from './fleet/exports.js'
import { GoalService } from './governance/goals.js'
import { ImportService } from './fleet/imports.js'
import { IssueRecordService } from './work/issue-records.js'
import { IssueService } from './work/issues.js'
import { ProjectService } from './governance/projects.js'
import { RoutineService } from './routines/routines.js'
import { defaultRoutineLimits, type RoutineLimits } from './routines/routine-access.js'
import { SkillService, type SkillImportOptions } from './fleet/skills.js'
import type { SecretProvider } from '../contracts/secret-provider.js'
import { localEncryptedProvider } from './secrets/local-encrypted.js'
import { SecretProviderConfigService, SecretProviderRegistry, defaultProviderTimeoutMs } from './secrets/secret-providers.js'
import { SecretService } from './secrets/secrets.js'
import { SquadService } from './org/squads.js'
import { TowerService } from './fleet/tower.js'
import { RunEngine, type RunOptions } from './runs/run-engine.js'
import { RunService } from './runs/runs.js'

/** The domain services of one instance; each can be called without HTTP. */
export interface Services {
  auth: AuthService
  consoleSessions: ConsoleSessionService
  squads: SquadService
  agents: AgentService
  issues: IssueService
  issueRecords: IssueRecordService
  activity: ActivityService
  exports: ExportService
  imports: ImportService
  tower: TowerService
  approvals: ApprovalService
  goals: GoalService
  projects: ProjectService
  costs: CostService
  budgets: BudgetService
  dashboard: DashboardService
  skills: SkillService
  routines: RoutineService
  secrets: SecretService
  secretProviders: SecretProviderConfigService
  runs: RunService
}

export interface CreateServicesOptions {
  /** Secret providers besides the built-in `local_encrypted`. */
  secretProviders?: readonly SecretProvider[]
  /** Deadline of one provider call (resolve, store, health, list). Default 10 s. */
  secretProviderTimeoutMs?: number
  runs?: RunOptions
  /** This node's job-runner identity and how often a running run checks for a cancel from another node. */
  node?: { nodeId: string; watchMs: number }
  /** Quotas on routines agent keys write (docs/routines.md, Quotas). */
  routines?: RoutineLimits
  /** Where skill imports from disk may read (docs/skills.md); none: imports from disk are off. */
  skillImports?: SkillImportOptions
  /** Failed authentications allowed per client address, or false for no limit. */
  authFailureLimit?: AuthFailureLimitOptions | false
  /** Console session lifetime in hours (default 12). */
  consoleSessionHours?: number
}

export function createServices(ctx: ServiceContext, options: CreateServicesOptions = {}): Services {
  const auth = new AuthService(ctx, options.authFailureLimit ?? {})
  const squads = new SquadService(ctx)
  const issues = new IssueService(ctx, squads)
  const agents = new AgentService(ctx, squads)
  // Registers its checkout guards on `issues` (budget stops).
  const budgets = new BudgetService(ctx, squads, agents, issues)
  const skills = new SkillService(ctx, squads, options.skillImports ?? { dir: null, protectedPaths: [] })
  const tower = new TowerService(ctx, issues)
  // The tower client pulls the skill catalog into the skill service's store.
  tower.useSkills(skills)
  const providerTimeoutMs = options.secretProviderTimeoutMs ?? defaultProviderTimeoutMs
  const secretRegistry = new SecretProviderRegistry(
    localEncryptedProvider(() => ctx.masterKey),
    options.secretProviders,
  )
  const secretProviders = new SecretProviderConfigService(ctx, squads, secretRegistry, providerTimeoutMs)
  const costs = new CostService(ctx, squads, issues, budgets)
  const engine = new RunEngine(ctx, issues, costs, options.runs ?? {}, options.node ?? { nodeId: 'node-local', watchMs: 20_000 })
  return {
    auth,
    consoleSessions: new ConsoleSessionService(ctx, auth, options.consoleSessionHours !== undefined ? { hours: options.consoleSessionHours } : {}),
    squads,
    agents,
    issues,
    issueRecords: new IssueRecordService(ctx, issues, squads),
    activity: new ActivityService(ctx, squads),
    exports: new ExportService(ctx, squads),
    imports: new ImportService(ctx, squads, agents, issues, skills),
    tower,
    approvals: new ApprovalService(ctx, squads, agents),
    goals: new GoalService(ctx, squads),
    projects: new ProjectService(ctx, squads, budgets),
    costs,
    budgets,
    dashboard: new DashboardService(ctx, squads),
    skills,
    routines: new RoutineService(ctx, squads, issues, { ...defaultRoutineLimits, ...definedOnly(options.routines ?? {}) }),
    secrets: new SecretService(ctx, squads, secretProviders, providerTimeoutMs),
    secretProviders,
    runs: new RunService(ctx, squads, agents, issues, engine),
  }
}

const definedOnly = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
