import { ActivityService } from './activity.js'
import { AgentService } from './agents.js'
import { AuthService } from './auth.js'
import type { ServiceContext } from './context.js'
import { IssueRecordService } from './issue-records.js'
import { IssueService } from './issues.js'
import { SquadService } from './squads.js'

/** The domain services of one instance; each can be called without HTTP. */
export interface Services {
  auth: AuthService
  squads: SquadService
  agents: AgentService
  issues: IssueService
  issueRecords: IssueRecordService
  activity: ActivityService
}

export function createServices(ctx: ServiceContext): Services {
  const squads = new SquadService(ctx)
  const issues = new IssueService(ctx, squads)
  return {
    auth: new AuthService(ctx),
    squads,
    agents: new AgentService(ctx, squads),
    issues,
    issueRecords: new IssueRecordService(ctx, issues),
    activity: new ActivityService(ctx, squads),
  }
}
