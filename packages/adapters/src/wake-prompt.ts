import type { AdapterWakeInput } from '@slaw/core'

/**
 * The prompt a CLI agent (claude_local, codex_local) gets on stdin when its config has no
 * `promptTemplate`. It names why the agent woke and what to work on, and how to talk to slaw: the
 * agent's own instructions (its `prompt`) go to the CLI as the system prompt, not here.
 */
export const defaultWakePromptTemplate = `You were woken by slaw ({{reason}}).
{{#issue}}
Your issue: {{issue.identifier}}: {{issue.title}} (status {{issue.status}})

{{issue.description}}
{{/issue}}
{{#comment}}
The newest comment, which mentioned you ({{comment.author}}):

{{comment.body}}
{{/comment}}

Talk to slaw over its HTTP API at $SVC_API_URL with the header "Authorization: Bearer $SVC_API_KEY"
(both are in your environment; the key is valid for this run only):
- check the issue out before you work on it: POST $SVC_API_URL/api/issues/{{issue.identifier}}/checkout with {"agentId": "$SVC_AGENT_ID"}
  (409 means another agent holds it: leave it alone);
- say what you did: POST $SVC_API_URL/api/issues/{{issue.identifier}}/comments with {"body": "..."};
- set its status when it changes: PATCH $SVC_API_URL/api/issues/{{issue.identifier}} with {"status": "in_review"} (or "done", "blocked");
- your other work: GET $SVC_API_URL/api/agents/me/inbox-lite.
End with a short summary of what you did.`

/** The variables a `promptTemplate` may use, with their values for this wake ('' when absent). */
export function wakePromptVariables(input: AdapterWakeInput<unknown>): Record<string, string> {
  const c = input.context ?? {}
  return {
    reason: input.reason,
    runId: input.runId,
    agentId: input.agentId,
    squadId: input.squadId,
    'agent.name': c.agentName ?? '',
    'issue.id': c.issue?.id ?? input.issueId ?? '',
    'issue.identifier': c.issue?.identifier ?? input.issueId ?? '',
    'issue.title': c.issue?.title ?? '',
    'issue.description': c.issue?.description ?? '',
    'issue.status': c.issue?.status ?? '',
    'comment.id': c.comment?.id ?? '',
    'comment.body': c.comment?.body ?? '',
    'comment.author': c.comment?.authorName ?? 'someone',
    apiUrl: input.env.SVC_API_URL ?? '',
  }
}

/**
 * Renders a template: `{{name}}` is replaced by a variable's value; `{{#issue}}…{{/issue}}` and
 * `{{#comment}}…{{/comment}}` keep their content only when the wake has an issue or a comment.
 * An unknown `{{name}}` is left as written, so a typo shows in the prompt instead of vanishing.
 */
export function renderWakePrompt(template: string | undefined, input: AdapterWakeInput<unknown>): string {
  const vars = wakePromptVariables(input)
  const has: Record<string, boolean> = { issue: Boolean(input.context?.issue ?? input.issueId), comment: Boolean(input.context?.comment) }
  const sections = (template ?? defaultWakePromptTemplate).replace(/\{\{#(issue|comment)\}\}\n?([\s\S]*?)\{\{\/\1\}\}\n?/g, (_all, name: string, body: string) => (has[name] ? body : ''))
  return sections.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (all, name: string) => (name in vars ? vars[name]! : all))
}
