// First start of the local gateway: create a local account and a key through the admin API and
// give it sandbox credit, so that a new user chats offline in one click.

export const LOCAL_ACCOUNT_EMAIL = 'vscode@local.example';
/** Sandbox credit for the local account, in currency units; idempotent by reference. */
export const LOCAL_WELCOME_CREDIT = 500;

export interface LocalAccount {
  accountId: string;
  apiKey: string;
}

export async function provisionLocalAccount(
  root: string,
  adminToken: string,
  existingAccountId: string | undefined,
  signal?: AbortSignal,
): Promise<LocalAccount> {
  const admin = async <T>(method: string, path: string, body: unknown): Promise<T> => {
    const response = await fetch(`${root}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: signal ?? AbortSignal.timeout(15_000),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  };

  const accountId =
    existingAccountId ??
    (
      await admin<{ id: string }>('POST', '/admin/accounts', {
        email: LOCAL_ACCOUNT_EMAIL,
        name: 'VS Code (local)',
      })
    ).id;
  const key = await admin<{ key: string }>(
    'POST',
    `/admin/accounts/${encodeURIComponent(accountId)}/keys`,
    {
      name: 'VS Code',
    },
  );
  await admin('POST', `/admin/accounts/${encodeURIComponent(accountId)}/credit`, {
    amount: LOCAL_WELCOME_CREDIT,
    reference: `vscode-welcome-${accountId}`,
  });
  return { accountId, apiKey: key.key };
}

export async function isHealthy(root: string, signal?: AbortSignal): Promise<boolean> {
  try {
    const response = await fetch(`${root}/healthz`, {
      signal: signal ?? AbortSignal.timeout(3_000),
    });
    return response.ok;
  } catch {
    return false;
  }
}
