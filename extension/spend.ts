// Spend control: what this VS Code session and today (UTC, kept in globalState so that it
// survives a restart) have cost, from every answer's x_aihub cost; and the daily cap
// (aihub.spendingCap.perDay, currency units): a request whose worst case (the estimated prompt at
// the input price plus max_tokens at the output price, as the gateway reserves it) could pass
// the cap is asked about first, and inline completions pause instead of asking.
// Amounts are integer micro-units throughout.
import * as vscode from 'vscode';
import { formatMoney, type SpendView } from './chat/protocol.js';
import type { ModelPrice } from './client.js';
import { fromMicros, toMicros, utcDay, worstCaseMicros } from './spendMath.js';

const DAY_KEY = 'aihub.spend.today';
const PRICES_TTL_MS = 10 * 60_000;
/** Per message, the chat format adds a few tokens (role, separators). */
const TOKENS_PER_MESSAGE = 4;

export interface SpendRequest {
  model: string;
  /** The text of every message sent. */
  promptChars: number;
  maxTokens: number;
  messages: number;
  /** What the request is, for the question ("This chat message", "Generate Code"). */
  purpose: string;
}

export class SpendTracker implements vscode.Disposable {
  private sessionMicros = 0;
  private currency = 'INR';
  private prices: { at: number; byModel: Map<string, ModelPrice> } | undefined;
  private readonly changed = new vscode.EventEmitter<SpendView>();
  readonly onDidChange = this.changed.event;
  private readonly asked = new vscode.EventEmitter<{
    purpose: string;
    worstCase: number;
    cap: number;
  }>();
  /** Fired when the extension asks before a request that could pass the cap (tests wait on it). */
  readonly onDidAsk = this.asked.event;

  constructor(
    private readonly memento: vscode.Memento,
    private readonly capUnits: () => number,
    private readonly loadPrices: () => Promise<ModelPrice[]>,
  ) {}

  record(costUnits: number, currency: string): void {
    const micros = toMicros(costUnits);
    if (!Number.isFinite(micros) || micros < 0) return;
    this.currency = currency;
    this.sessionMicros += micros;
    void this.memento.update(DAY_KEY, { day: utcDay(), micros: this.todayMicros() + micros });
    this.changed.fire(this.view());
  }

  todayMicros(): number {
    const stored = this.memento.get<{ day?: unknown; micros?: unknown }>(DAY_KEY);
    return stored && stored.day === utcDay() && Number.isSafeInteger(stored.micros)
      ? (stored.micros as number)
      : 0;
  }

  capMicros(): number | undefined {
    const cap = this.capUnits();
    return Number.isFinite(cap) && cap > 0 ? toMicros(cap) : undefined;
  }

  capReached(): boolean {
    const cap = this.capMicros();
    return cap !== undefined && this.todayMicros() >= cap;
  }

  view(): SpendView {
    const cap = this.capMicros();
    return {
      currency: this.currency,
      session: fromMicros(this.sessionMicros),
      today: fromMicros(this.todayMicros()),
      cap: cap === undefined ? undefined : fromMicros(cap),
      capReached: this.capReached(),
    };
  }

  /** Tells the views again (the cap setting changed). */
  refresh(): void {
    this.changed.fire(this.view());
  }

  /** The worst case of a request, or undefined when the model's price is unknown. */
  async worstCase(request: SpendRequest): Promise<number | undefined> {
    const price = await this.price(request.model);
    if (!price) return undefined;
    const promptTokens = Math.ceil(request.promptChars / 4) + request.messages * TOKENS_PER_MESSAGE;
    return worstCaseMicros(price, promptTokens, request.maxTokens);
  }

  /** Whether the request may go: without a cap, or below it, yes; otherwise the user is asked. */
  async confirm(request: SpendRequest): Promise<boolean> {
    const cap = this.capMicros();
    if (cap === undefined) return true;
    const today = this.todayMicros();
    const worst = await this.worstCase(request);
    if (worst === undefined ? today < cap : today + worst <= cap) return true;
    const money = (micros: number): string => formatMoney(fromMicros(micros), this.currency);
    const worstText = worst === undefined ? 'an unknown amount' : `up to ${money(worst)}`;
    this.asked.fire({
      purpose: request.purpose,
      worstCase: worst === undefined ? NaN : fromMicros(worst),
      cap: fromMicros(cap),
    });
    const send = {
      label: '$(check) Send anyway',
      detail: `${request.purpose} could cost ${worstText}.`,
    };
    const cancel = { label: '$(close) Cancel', detail: 'Nothing is sent.' };
    const picked = await vscode.window.showQuickPick([cancel, send], {
      title: `AIHub: this request could pass your daily spending cap of ${money(cap)} (${money(today)} spent today)`,
      placeHolder: `${request.purpose} could cost ${worstText}. Send it anyway?`,
      ignoreFocusOut: true,
    });
    return picked === send;
  }

  /** For inline completions: true when the request stays under the cap, never asks. */
  async allowsQuietly(request: SpendRequest): Promise<boolean> {
    const cap = this.capMicros();
    if (cap === undefined) return true;
    const worst = await this.worstCase(request);
    return worst === undefined ? this.todayMicros() < cap : this.todayMicros() + worst <= cap;
  }

  private async price(model: string): Promise<ModelPrice | undefined> {
    if (
      !this.prices ||
      Date.now() - this.prices.at > PRICES_TTL_MS ||
      !this.prices.byModel.has(model)
    ) {
      try {
        const list = await this.loadPrices();
        this.prices = { at: Date.now(), byModel: new Map(list.map((p) => [p.id, p])) };
      } catch {
        return this.prices?.byModel.get(model);
      }
    }
    return this.prices.byModel.get(model);
  }

  dispose(): void {
    this.changed.dispose();
    this.asked.dispose();
  }
}
