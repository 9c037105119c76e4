// The chat API's Prometheus metrics (aihub_chat_*), on the gateway's registry, at GET /metrics.
// Every label set is known up front (tier ids, configured engine names, the fixed outcome
// and status values), so each series is created once, at 0, and the hot path touches only
// pre-built cells; refusals, whose codes are many and rare, get their cell at the first one
// (from bounded sets: a code the gateway does not know counts as `other`). The counters are plain numbers handed to prom-client when it scrapes:
// a prom-client child's inc() hashes its label set on every call; adding to a number costs
// nothing. The breaker gauge is read at scrape time, so it is never stale.
import { Counter, Gauge, type Registry } from 'prom-client';
import { FastHistogram } from '../telemetry/histogram.js';
import type { BreakerState } from '../llm/breaker.js';
import type { AttemptOutcome } from '../llm/router.js';
import type { UsageStatus } from './billing.js';
import { TIER_IDS } from './config.js';
import type { ProtocolName } from './protocol.js';
import { PROTOCOL_NAMES } from './protocols/index.js';
import type { Usage } from './protocol.js';
import { operationOf, PrometheusGenAi, providerOf, type EngineShape } from '../telemetry/genai.js';

/** Every attempt outcome and usage status, checked exhaustive by the compiler. */
const OUTCOMES = Object.keys({
  ok: 0,
  circuit_open: 0,
  connection: 0,
  timeout: 0,
  rate_limited: 0,
  server: 0,
  misconfigured: 0,
  rejected: 0,
  invalid_response: 0,
  aborted: 0,
} satisfies Record<AttemptOutcome, 0>) as AttemptOutcome[];
const STATUSES = Object.keys({
  ok: 0,
  client_closed: 0,
  upstream_error: 0,
  stream_error: 0,
} satisfies Record<UsageStatus, 0>) as UsageStatus[];

const BREAKER_VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

/** The refusal codes counted by name (the gateway's own, and an upstream's commonest); others count as `other`. */
const REFUSAL_CODES = new Set([
  'invalid_value',
  'invalid_json',
  'json_too_deep',
  'invalid_path',
  'context_length_exceeded',
  'invalid_api_key',
  'account_disabled',
  'service_inactive',
  'ip_not_allowed',
  'insufficient_balance',
  'model_not_found',
  'not_found',
  'request_too_large',
  'unsupported_encoding',
  'rate_limit_exceeded',
  'daily_token_allowance_exceeded',
  'upstream_rejected_request',
  'client_closed_request',
]);
/** Where a /v1 refusal happened: a protocol's routes, or the others (models, balance, no route). */
export type RefusalRoute = ProtocolName | 'other';

/** LLM calls: a cached answer in a few ms, a long generation in tens of seconds. */
export const UPSTREAM_LATENCY_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60,
];

/** One counter series: the running total, handed to prom-client (as the increase since the last scrape) when it collects. */
class Cell {
  value = 0;
  private reported = 0;
  constructor(private readonly series: { inc(value: number): void }) {
    series.inc(0); // the series exists from the start
  }
  report(): void {
    if (this.value === this.reported) return;
    this.series.inc(this.value - this.reported);
    this.reported = this.value;
  }
}

interface ModelCells {
  /** by status, then [JSON, stream] */
  requests: Record<UsageStatus, [Cell, Cell]>;
  prompt_tokens: Cell;
  completion_tokens: Cell;
  cost_micros: Cell;
}

/** A metric's collect(): each cell reports what it counted since the last scrape. */
const reporter = (cells: Cell[]) => () => {
  for (const cell of cells) cell.report();
};

export class ChatMetrics {
  private readonly attempts = new Map<string, Record<AttemptOutcome, Cell>>();
  private readonly latency = new Map<string, { observe(seconds: number): void }>();
  private readonly models = new Map<string, ModelCells>();
  private readonly protocols = new Map<ProtocolName, Cell>();
  private readonly refusals = new Map<string, Cell>();
  private readonly refusal_counter: Counter<'protocol' | 'code'>;
  private readonly refusal_cells: Cell[] = [];
  /** gen_ai.client.token.usage and gen_ai.client.operation.duration, as Prometheus spells them. */
  private readonly gen_ai: PrometheusGenAi;
  private readonly providers: ReadonlyMap<string, string>;

  /** Throws if `registry` already holds the aihub_chat_* metrics: one ChatService per registry. */
  constructor(
    registry: Registry,
    targets: Iterable<string>,
    breakerStates: () => Record<string, BreakerState>,
    rateShare: () => { share: number; gateways: number } = () => ({ share: 0, gateways: 1 }),
    engines: Record<string, EngineShape> = {},
  ) {
    this.gen_ai = new PrometheusGenAi(registry);
    this.providers = new Map(
      Object.entries(engines).map(([name, engine]) => [name, providerOf(engine)]),
    );
    this.registerUpstream(registry, targets, breakerStates);
    this.registerRequests(registry);
    this.refusal_counter = new Counter({
      name: 'aihub_chat_refusals_total',
      help: 'Requests /v1 refused with a 4xx before any answer, by the protocol of the route (other: models, balance, no route) and the error code (other: a code the gateway does not name)',
      labelNames: ['protocol', 'code'] as const,
      registers: [registry],
      collect: reporter(this.refusal_cells),
    });
    const share: Gauge = new Gauge({
      name: 'aihub_chat_rate_limit_share',
      help: 'Requests per minute per key this gateway admits: the limit, or with several gateways on one database ceil(limit / aihub_gateways_live)',
      registers: [registry],
      collect: () => {
        share.set(rateShare().share);
      },
    });
    const live: Gauge = new Gauge({
      name: 'aihub_gateways_live',
      help: 'Gateways on this store with a recent heartbeat, this one included (1 with the JSON-file store)',
      registers: [registry],
      collect: () => {
        live.set(rateShare().gateways);
      },
    });
  }

  /** Attempts, latency and breaker state per upstream target. */
  private registerUpstream(
    registry: Registry,
    targets: Iterable<string>,
    breakerStates: () => Record<string, BreakerState>,
  ): void {
    const attempt_cells: Cell[] = [];
    const attempts = new Counter({
      name: 'aihub_chat_upstream_attempts_total',
      help: 'Upstream attempts by the chat router, by target (engine) and outcome (ok, circuit_open or the error kind)',
      labelNames: ['target', 'outcome'] as const,
      registers: [registry],
      collect: reporter(attempt_cells),
    });
    const latency = new FastHistogram(
      'aihub_chat_upstream_latency_seconds',
      'Duration of successful upstream calls by target: to the full answer (JSON) or to the first chunk (streams)',
      ['target'],
      UPSTREAM_LATENCY_BUCKETS,
      registry,
    );
    const gauge = new Gauge({
      name: 'aihub_chat_breaker_state',
      help: "Each target's circuit breaker: 0 closed, 1 half-open, 2 open",
      labelNames: ['target'] as const,
      registers: [registry],
      collect: () => {
        for (const [target, state] of Object.entries(breakerStates()))
          gauge.labels(target).set(BREAKER_VALUE[state]);
      },
    });
    for (const target of targets) {
      const by_outcome = {} as Record<AttemptOutcome, Cell>;
      for (const outcome of OUTCOMES)
        attempt_cells.push((by_outcome[outcome] = new Cell(attempts.labels(target, outcome))));
      this.attempts.set(target, by_outcome);
      this.latency.set(target, latency.series({ target }));
    }
  }

  /** Settled requests, tokens and cost per model, and requests per wire protocol. */
  private registerRequests(registry: Registry): void {
    const request_cells: Cell[] = [];
    const token_cells: Cell[] = [];
    const cost_cells: Cell[] = [];
    const requests = new Counter({
      name: 'aihub_chat_requests_total',
      help: 'Settled chat completion requests by model, usage status and stream',
      labelNames: ['model', 'status', 'stream'] as const,
      registers: [registry],
      collect: reporter(request_cells),
    });
    const tokens = new Counter({
      name: 'aihub_chat_tokens_total',
      help: 'Billed tokens of settled chat requests by model and kind (prompt, completion)',
      labelNames: ['model', 'kind'] as const,
      registers: [registry],
      collect: reporter(token_cells),
    });
    const cost = new Counter({
      name: 'aihub_chat_cost_micros_total',
      help: 'Amount charged for settled chat requests by model, in micro-units of the gateway currency',
      labelNames: ['model'] as const,
      registers: [registry],
      collect: reporter(cost_cells),
    });
    const protocol_cells: Cell[] = [];
    const protocols = new Counter({
      name: 'aihub_chat_protocol_requests_total',
      help: 'Settled /v1 requests by the wire protocol the client spoke (chat, responses, messages, embeddings, completions)',
      labelNames: ['protocol'] as const,
      registers: [registry],
      collect: reporter(protocol_cells),
    });
    for (const protocol of PROTOCOL_NAMES) {
      const cell = new Cell(protocols.labels(protocol));
      protocol_cells.push(cell);
      this.protocols.set(protocol, cell);
    }
    for (const model of TIER_IDS) {
      const by_status = {} as ModelCells['requests'];
      for (const status of STATUSES) {
        const pair: [Cell, Cell] = [
          new Cell(requests.labels(model, status, 'false')),
          new Cell(requests.labels(model, status, 'true')),
        ];
        request_cells.push(...pair);
        by_status[status] = pair;
      }
      const cells: ModelCells = {
        requests: by_status,
        prompt_tokens: new Cell(tokens.labels(model, 'prompt')),
        completion_tokens: new Cell(tokens.labels(model, 'completion')),
        cost_micros: new Cell(cost.labels(model)),
      };
      token_cells.push(cells.prompt_tokens, cells.completion_tokens);
      cost_cells.push(cells.cost_micros);
      this.models.set(model, cells);
    }
  }

  /** One refused request (a 4xx answered), by route protocol and code. */
  refused(protocol: RefusalRoute, code: string): void {
    const known = REFUSAL_CODES.has(code) ? code : 'other';
    const key = `${protocol}\u0000${known}`;
    let cell = this.refusals.get(key);
    if (!cell) {
      cell = new Cell(this.refusal_counter.labels(protocol, known));
      this.refusals.set(key, cell);
      this.refusal_cells.push(cell);
    }
    cell.value++;
  }

  /** The router's AttemptObserver. */
  readonly attempt = (target: string, outcome: AttemptOutcome, seconds: number): void => {
    const cells = this.attempts.get(target);
    if (!cells) return;
    cells[outcome].value++;
    if (outcome === 'ok') this.latency.get(target)!.observe(seconds);
  };

  /** The GenAI histograms of one settled request. */
  genAi(
    protocol: ProtocolName,
    tier: string,
    target: string | null,
    status: UsageStatus,
    usage: Usage,
    seconds: number,
  ): void {
    this.gen_ai.record(
      {
        operation: operationOf(protocol),
        tier,
        target,
        provider: target ? (this.providers.get(target) ?? null) : null,
        failed: status === 'upstream_error' || status === 'stream_error',
      },
      usage.prompt_tokens,
      usage.completion_tokens,
      seconds,
    );
  }

  /** One settled request, with what it was billed. */
  settled(
    model: string,
    protocol: ProtocolName,
    status: UsageStatus,
    stream: boolean,
    prompt_tokens: number,
    completion_tokens: number,
    cost_micros: number,
  ): void {
    const by_protocol = this.protocols.get(protocol);
    if (by_protocol) by_protocol.value++;
    const cells = this.models.get(model);
    if (!cells) return;
    cells.requests[status][stream ? 1 : 0].value++;
    cells.prompt_tokens.value += prompt_tokens;
    cells.completion_tokens.value += completion_tokens;
    cells.cost_micros.value += cost_micros;
  }
}
