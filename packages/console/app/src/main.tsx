import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App'
import { ApiFailure, createConsoleClient } from './lib/api'
import { ClientProvider } from './state'
import { applyTheme, storedTheme } from './theme'
import './styles.css'

applyTheme(storedTheme())

const client = createConsoleClient(window.location.origin)
const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({
    // A 401 on any read means the session ended: the session query then shows the sign-in page.
    onError: (err, query) => {
      if (query.queryKey[0] === 'session') return // its own 401 is the signed-out state
      if (err instanceof ApiFailure && err.status === 401) void queryClient.invalidateQueries({ queryKey: ['session'] })
    },
  }),
  defaultOptions: {
    queries: {
      // Freshness comes from the event stream, never from timers or focus: no page polls.
      staleTime: Infinity,
      refetchOnWindowFocus: false,
      refetchOnReconnect: false,
      retry: (n, err) => !(err instanceof ApiFailure && err.status < 500) && n < 2,
    },
  },
})

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <ClientProvider client={client}>
        <App />
      </ClientProvider>
    </QueryClientProvider>
  </StrictMode>,
)
