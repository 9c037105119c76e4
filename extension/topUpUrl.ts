// The address the Top Up action opens: the gateway's wallet page, with the amount a 402 said
// was short filled in (the gateway names it in the x-aihub-topup-url header). The page is
// opened on the base URL the extension reaches the gateway by, not the host the gateway names:
// that one may be an address only the server knows (0.0.0.0, a container's name). Pure.

/** The amount (`?amount=` of the gateway's top-up URL) when it is a plain positive decimal. */
export function shortfallOf(topUpUrl: string | undefined): string | undefined {
  if (!topUpUrl) return undefined;
  let amount: string | null;
  try {
    amount = new URL(topUpUrl).searchParams.get('amount');
  } catch {
    return undefined;
  }
  return amount && /^\d{1,12}(\.\d{1,2})?$/.test(amount) && Number(amount) > 0 ? amount : undefined;
}

/** `<root>/wallet`, with `?amount=` when the gateway named a shortfall. */
export function topUpAddress(root: string, topUpUrl?: string): string {
  const amount = shortfallOf(topUpUrl);
  return amount ? `${root}/wallet?amount=${amount}` : `${root}/wallet`;
}
