import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState, type FormEvent } from 'react'
import { unwrap } from '../lib/api'
import { href, navigate } from '../lib/router'
import { useApi } from '../state'
import { AgentOptions, ErrorBox } from './ui'

const priorities = ['critical', 'high', 'medium', 'low'] as const
const statuses = ['backlog', 'todo'] as const

export function NewIssueDialog({ squadId, onClose }: { squadId: string; onClose: () => void }) {
  const api = useApi()
  const queryClient = useQueryClient()
  const agents = useQuery({ queryKey: ['squad', squadId, 'agents'], queryFn: async () => unwrap(await api.GET('/api/squads/{squadId}/agents', { params: { path: { squadId } } })).agents })
  const [title, setTitle] = useState('')
  const [description, setDescription] = useState('')
  const [priority, setPriority] = useState<(typeof priorities)[number]>('medium')
  const [status, setStatus] = useState<(typeof statuses)[number]>('todo')
  const [assignee, setAssignee] = useState('')
  const create = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/squads/{squadId}/issues', {
          params: { path: { squadId } },
          body: { title: title.trim(), priority, status, ...(description.trim() ? { description: description.trim() } : {}), ...(assignee ? { assigneeAgentId: assignee } : {}) },
        }),
      ).issue,
    onSuccess: (issue) => {
      void queryClient.invalidateQueries({ queryKey: ['squad', squadId, 'issues'] })
      onClose()
      navigate(href({ name: 'issue', squadId, id: issue.id }))
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (title.trim()) create.mutate()
  }
  return (
    <dialog open className="modal" aria-labelledby="new-issue-title" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <form onSubmit={submit}>
        <h2 id="new-issue-title">New issue</h2>
        <label>
          Title
          <input autoFocus required value={title} onChange={(e) => setTitle(e.target.value)} maxLength={500} />
        </label>
        <label>
          Description
          <textarea rows={4} value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <div className="row">
          <label>
            Priority
            <select value={priority} onChange={(e) => setPriority(e.target.value as (typeof priorities)[number])}>
              {priorities.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          </label>
          <label>
            Status
            <select value={status} onChange={(e) => setStatus(e.target.value as (typeof statuses)[number])}>
              {statuses.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </label>
          <label>
            Assignee
            <select value={assignee} onChange={(e) => setAssignee(e.target.value)}>
              <option value="">Nobody</option>
              <AgentOptions agents={(agents.data ?? []).filter((a) => a.status !== 'terminated')} />
            </select>
          </label>
        </div>
        {create.error ? <ErrorBox error={create.error} /> : null}
        <div className="actions">
          <button type="submit" disabled={create.isPending || !title.trim()}>
            Create issue
          </button>
          <button type="button" className="ghost" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  )
}
