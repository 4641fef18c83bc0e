// The shared build config, except that cleaning keeps dist/app (the app's Vite build, made first).
import base from '../../tsup.config.ts'

export default { ...base, clean: ['!app/**'] }
