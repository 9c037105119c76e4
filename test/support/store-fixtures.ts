// Rows the store tests write, shared by the JSON-file and the PostgreSQL store tests.
export const testAccount = (id: string) => ({
  id,
  email: `${id}@x.io`,
  name: '',
  status: 'active' as const,
  services: { ai: true, recharge: false, dmt: false, pan: false, bills: false },
  kyc_status: 'none' as const,
  ip_whitelist: [],
  password_hash: null,
  webhook: null,
  created_at: '2026-01-01T00:00:00.000Z',
});
