// The `/v1` routes: chat completions (JSON and server-sent events), models and balance.
// The hot path is written for speed: hash lookup auth, a hand-rolled body reader, one
// tokenizer pass for the estimate, the worst case reserved in memory (never journaled), and
// one durable commit per request: the actual cost with its usage record.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import type { RouteDoc } from '../http/openapi.js';
import { chatRouteDocs } from './openapi.js';
import type { RoomDeps } from '../deps.js';
import { RateLimiter } from '../kernel/rate-limit.js';
import { authenticate, isUnknownKey } from '../accounts/auth.js';
import {
  assertAddressAllowed,
  clientAddressOf,
  isAllowed,
  plainAddress,
  type TrustProxy,
} from '../accounts/ip-whitelist.js';
import { ApiError, storeUnavailable } from '../http/errors.js';
import { StoreUnavailableError } from '../kernel/errors.js';
import { DEFAULT_LEASE_MS, SharedReservations } from './reservations.js';
import { gatewayId } from '../http/metrics.js';
import { assertJsonDepth } from '../http/json-depth.js';
import { pathOf, sendJson, type Locals } from '../http/lean.js';
import { balanceMicros, owedMicros } from '../ledger/ledger.js';
import { table } from '../store/state.js';
import { microsToUnits } from '../util/money.js';
import { createLlm, type Llm } from '../llm/index.js';
import { Router, RoutingError, type OpenedStream } from '../llm/router.js';
import {
  UpstreamError,
  type Engine,
  type EngineRequest,
  type NativeAnswer,
  type NativeRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
  type UpstreamUsage,
} from '../llm/types.js';
import {
  freeTokensUsed,
  InsufficientBalanceError,
  reserve,
  reserveShared,
  secondsToNextUtcDay,
  settle,
  utcDay,
  type Reservation,
  type Settlement,
  type UsageStatus,
} from './billing.js';
import { isTierId, targetPrice, TIER_IDS, type ChatConfig, type TierConfig } from './config.js';
import { ChatMetrics } from './metrics.js';
import { costMicros } from './pricing.js';
import { SseWriter } from './sse.js';
import {
  PROTOCOL_NAMES,
  type AnswerMeta,
  type ChatCall,
  type Protocol,
  type ProtocolName,
  type SseOut,
  type Usage,
  type XAihub,
} from './protocols/types.js';
import { embeddingsJson, parseEmbeddings } from './protocols/embeddings/route.js';
import { NATIVE_CAP_FIELD, NativeStream, nativeJson, nativeUsage } from './native.js';
import { chatProtocol } from './protocols/chat/route.js';
import { responsesProtocol } from './protocols/responses/translate.js';
import { countTokens, messagesProtocol } from './protocols/messages/translate.js';
import { completionsProtocol } from './protocols/completions/route.js';
import { countPromptTokens, countTextTokens, toolCallText } from '../llm/tokens.js';

/** `created` of the model list: the day the five tiers were introduced. */
const MODELS_CREATED = 1_735_689_600;

/** The POST routes of the chat pipeline, one protocol each. */
const PROTOCOLS = new Map<string, Protocol>([
  ['/v1/chat/completions', chatProtocol],
  ['/v1/responses', responsesProtocol],
  ['/v1/messages', messagesProtocol],
  ['/v1/completions', completionsProtocol],
]);

export interface ChatOptions {
  /** Engines by name (the llm room's, or scripted ones in tests); by default the service builds and owns the config's. */
  engines?: Map<string, Engine>;
  env?: NodeJS.ProcessEnv;
  /** The config's trust_proxy as main.ts compiled it once, the rule Express's req.ip applies too; default: the socket's peer. */
  trust_proxy?: TrustProxy;
}

/**
 * The /v1 service. Its routes are served by the lean lane in front of Express
 * (gateway/http/lean.ts), so they work on Node's own request and response objects.
 */
export function createChat(deps: RoomDeps, options: ChatOptions = {}): ChatService {
  return new ChatService(deps, deps.config.chat, options);
}

type Req = IncomingMessage;
type Res = ServerResponse;

export class ChatService {
  /** The /v1 API's part of the OpenAPI document. */
  readonly docs: RouteDoc[] = chatRouteDocs;
  readonly router: Router;
  readonly metrics: ChatMetrics;
  private readonly limiter: RateLimiter;
  private readonly engines: Map<string, Engine>;
  private readonly own_llm: Llm | null;
  private readonly currency: string;
  private in_flight = 0;
  /** With the PostgreSQL store: reservations every gateway sees (null: volatile, this process only). */
  private readonly shared_reservations: SharedReservations | null;
  private readonly client_address: (req: IncomingMessage) => string | undefined;

  constructor(
    private readonly deps: RoomDeps,
    readonly config: ChatConfig,
    options: ChatOptions,
  ) {
    const now_ms = () => deps.clock.now().getTime();
    this.own_llm = options.engines ? null : createLlm(deps, options.env);
    this.engines = options.engines ?? this.own_llm!.engines;
    // Without the gateway's registry (unit tests), the metrics go to one nobody scrapes.
    this.metrics = new ChatMetrics(
      deps.metrics?.registry ?? new Registry(),
      this.engines.keys(),
      () => this.router.breakerStates(),
      () => this.rateShare(),
    );
    this.router = new Router(this.engines, config.breaker, now_ms, this.metrics.attempt);
    this.limiter = new RateLimiter(
      { max: config.rate_limit.requests_per_minute, window_ms: 60_000, refill: 'steady' },
      { now_ms },
    );
    this.currency = deps.config.currency;
    const trust = options.trust_proxy;
    this.client_address = trust
      ? (req) => clientAddressOf(req, trust)
      : (req) => plainAddress(req.socket.remoteAddress);
    this.shared_reservations = deps.store.isShared()
      ? new SharedReservations(
          deps.store,
          gatewayId(options.env ?? process.env),
          leaseMs(options.env ?? process.env),
        )
      : null;
    this.shared_reservations?.start();
  }

  /** Closes the engines this service built itself; engines handed in are their builder's to close. */
  async close(): Promise<void> {
    this.shared_reservations?.stop();
    await this.own_llm?.close();
  }

  private now_ms(): number {
    return this.deps.clock.now().getTime();
  }

  /** Routes one /v1 request; an unknown path or method is a 404 in OpenAI's shape. */
  handle(req: Req, res: Res, locals: Locals): Promise<void> | void {
    // PostgreSQL store: a key another gateway created a moment ago is looked for in the shared log once.
    if (this.deps.store.isShared() && isUnknownKey(this.deps.store.state, req.headers))
      return this.deps.store.readDurable().then(() => this.route(req, res, locals));
    return this.route(req, res, locals);
  }

  private route(req: Req, res: Res, locals: Locals): Promise<void> | void {
    const path = pathOf(req.url);
    if (req.method === 'POST') {
      const protocol = PROTOCOLS.get(path);
      if (protocol) return this.run(req, res, locals, protocol);
      if (path === '/v1/messages/count_tokens') return this.countTokens(req, res, locals);
      if (path === '/v1/embeddings') return this.embeddings(req, res, locals);
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      if (path === '/v1/models') return this.models(req, res, locals);
      if (path === '/v1/balance') return this.balance(req, res, locals);
      if (path.startsWith('/v1/models/')) {
        locals.route = '/v1/models/:model';
        return this.model(req, res, locals, decodeURIComponent(path.slice('/v1/models/'.length)));
      }
    }
    throw new ApiError(404, 'not_found', `no route for ${req.method} ${path.slice(0, 200)}`);
  }

  /** The key, then the account's IP whitelist (it binds every request a key makes), then the service: all from the head. */
  private auth(req: Req, locals: Locals) {
    const found = authenticate(this.deps.store.state, req.headers);
    locals.account_id = found.account.id;
    if (found.account.ip_whitelist.length > 0) {
      const address = this.client_address(req);
      if (!isAllowed(found.account.ip_whitelist, address)) {
        this.deps.logger.warn({
          msg: 'request from an address outside the IP whitelist',
          account_id: found.account.id,
          key_prefix: found.key.prefix,
          ip: address,
          route: locals.route,
        });
        assertAddressAllowed(found.account, address);
      }
    }
    if (!found.account.services.ai)
      throw new ApiError(
        403,
        'service_inactive',
        'the AI service is not active for this account',
        null,
        'permission_error',
      );
    return found;
  }

  /**
   * The one chat pipeline every protocol runs through: auth → rate limit → validation and
   * translation (the protocol's) → tier and price → the worst case reserved → router and
   * engine → relay (the protocol's presenters) → usage → settlement → x_aihub.
   */
  async run(req: Req, res: Res, locals: Locals, protocol: Protocol): Promise<void> {
    try {
      await this.pipeline(req, res, locals, protocol);
    } catch (error) {
      throw protocol.error && error instanceof ApiError ? protocol.error(error) : error;
    }
  }

  private async pipeline(req: Req, res: Res, locals: Locals, protocol: Protocol): Promise<void> {
    const started_ms = performance.now();
    const request_id = locals.request_id;
    const { account, key } = this.auth(req, locals);
    this.takeRate(key.id);
    const body = protocol.parse(await readJson(req, this.config.body_limit_bytes));
    const tier = this.admit(body.model);

    const prompt_tokens_estimate = countPromptTokens(body.messages, body.params.tools);
    const room = tier.context_window - prompt_tokens_estimate;
    if (room < 1) {
      throw new ApiError(
        400,
        'context_length_exceeded',
        `the messages take about ${prompt_tokens_estimate} tokens; ${tier.id} accepts at most ${tier.context_window - 1} so that at least one can be generated`,
        'messages',
        'invalid_request_error',
      );
    }
    const cap_field = body.cap_field;
    const requested = body.requested_max;
    if (requested !== null && requested > tier.max_output_tokens) {
      throw new ApiError(
        400,
        'invalid_value',
        `${cap_field} is too large: ${requested}; ${tier.id} generates at most ${tier.max_output_tokens} tokens`,
        cap_field,
        'invalid_request_error',
      );
    }
    const { reservation, free_tokens, max_output_tokens } = await this.hold(
      account.id,
      key.id,
      tier,
      request_id,
      prompt_tokens_estimate,
      Math.min(requested ?? tier.max_output_tokens, room),
      cap_field,
      body.choices,
    );

    const { signal, end } = this.begin(res, account.id, reservation, free_tokens);
    const engine_request: EngineRequest = {
      params: body.params,
      messages: body.messages,
      max_output_tokens,
      prompt_tokens_estimate,
      signal,
    };
    const meta: AnswerMeta = {
      request_id,
      model: tier.id,
      created: Math.floor(this.now_ms() / 1000),
      prompt_tokens_estimate,
    };
    const context: Call = {
      reservation,
      tier,
      request_id,
      started_ms,
      engine_request,
      body,
      meta,
      protocol: body.protocol,
    };
    try {
      if (body.stream) await this.streamed(res, context);
      else await this.plain(res, context);
    } finally {
      end();
    }
  }

  /** The tier a model id names, if the gateway has room for one more request. */
  private admit(model: string): TierConfig {
    if (!isTierId(model)) {
      throw new ApiError(
        404,
        'model_not_found',
        `the model \`${model.slice(0, 100)}\` does not exist; use one of ${TIER_IDS.join(', ')}`,
        'model',
        'invalid_request_error',
      );
    }
    if (this.in_flight >= this.config.max_in_flight) {
      throw new ApiError(
        503,
        'overloaded',
        'the gateway is at its limit of concurrent chat requests; retry shortly',
        null,
        'api_error',
        { 'retry-after': '1' },
      );
    }
    return this.config.models[model];
  }

  /** Counts a held request in flight and ties an abort signal to its client's connection; end() undoes both. */
  private begin(res: Res, account_id: string, reservation: Reservation, free_tokens: number) {
    this.in_flight++;
    if (free_tokens) this.addReservedFree(account_id, free_tokens);
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.on('close', onClose);
    const end = () => {
      // Settled by now (a no-op then), or cut short by an error nobody foresaw: either way no
      // reservation outlives its request.
      reservation.money.release();
      res.off('close', onClose);
      this.in_flight--;
      if (free_tokens) this.addReservedFree(account_id, -free_tokens);
    };
    return { signal: abort.signal, end };
  }

  /**
   * Reserves the worst case of a request (prompt plus at most `max_output_tokens`), within
   * the free tier's daily allowance; throws the 429 or 402 the client should see.
   */
  private async hold(
    account_id: string,
    key_id: string,
    tier: TierConfig,
    request_id: string,
    prompt_tokens_estimate: number,
    max_output: number,
    cap_field: string,
    choices = 1,
  ) {
    let max_output_tokens = max_output;
    let free_tokens = 0;
    if (tier.daily_token_allowance !== null)
      ({ max_output_tokens, free_tokens } = this.freeAllowance(
        tier,
        account_id,
        prompt_tokens_estimate,
        max_output_tokens,
        choices,
      ));
    // Each of the n choices may use the whole output limit, at the price of the dearest target.
    const worst_case_micros = worstCaseMicros(
      tier,
      prompt_tokens_estimate,
      max_output_tokens * choices,
    );
    try {
      const input = { account_id, key_id, tier, request_id, worst_case_micros, free_tokens };
      const reservation = this.shared_reservations
        ? await reserveShared(this.shared_reservations, input)
        : reserve(this.deps.store, input);
      return { reservation, free_tokens, max_output_tokens };
    } catch (error) {
      if (error instanceof InsufficientBalanceError) {
        const what =
          max_output_tokens > 0
            ? `prompt plus ${max_output_tokens} output tokens; set ${cap_field} lower to hold less`
            : `${prompt_tokens_estimate} input tokens`;
        throw new ApiError(
          402,
          'insufficient_balance',
          `insufficient balance: this request may cost up to ${microsToUnits(worst_case_micros)} ${this.currency} (${what}) and the wallet has ${microsToUnits(error.balance_micros)} ${this.currency}; top up at ${this.deps.public_url()}/wallet`,
          null,
          'insufficient_balance',
        );
      }
      throw error;
    }
  }

  /** Embeddings: the same key, limits, hold, router, settlement and bill as a chat request; no output tokens. */
  private async embeddings(req: Req, res: Res, locals: Locals): Promise<void> {
    const started_ms = performance.now();
    const request_id = locals.request_id;
    const { account, key } = this.auth(req, locals);
    this.takeRate(key.id);
    const body = parseEmbeddings(await readJson(req, this.config.body_limit_bytes));
    const tier = this.admit(body.model);
    const { reservation, free_tokens } = await this.hold(
      account.id,
      key.id,
      tier,
      request_id,
      body.prompt_tokens_estimate,
      0,
      'input',
    );
    const { signal, end } = this.begin(res, account.id, reservation, free_tokens);
    const call: Settling = { reservation, tier, request_id, started_ms, protocol: 'embeddings' };
    try {
      let routed;
      try {
        routed = await this.router.embed(tier.targets, {
          input: body.input,
          dimensions: body.dimensions,
          signal,
        });
      } catch (error) {
        throw await this.unrouted(call, body.prompt_tokens_estimate, signal.aborted, false, error);
      }
      const prompt_tokens = routed.value.usage?.prompt_tokens ?? body.prompt_tokens_estimate;
      const usage: Usage = {
        prompt_tokens,
        completion_tokens: 0,
        cached_tokens: 0,
        reasoning_tokens: 0,
        estimated: routed.value.usage?.prompt_tokens === undefined,
      };
      const settlement = await this.finish(
        call,
        usage,
        signal.aborted ? 'client_closed' : 'ok',
        routed.target,
        false,
      );
      if (res.destroyed) return;
      const text = JSON.stringify(
        embeddingsJson(
          body,
          routed.value,
          prompt_tokens,
          this.xAihub(call, usage, settlement, routed.target),
          tier.id,
        ),
      );
      this.answerJson(res, call, settlement, text);
    } finally {
      end();
    }
  }

  /**
   * This gateway's share of the per-key limit: the whole limit alone (the JSON-file store),
   * ceil(limit / live gateways) with several on one database (docs/store-postgres.md).
   */
  rateShare(): { share: number; gateways: number } {
    const gateways = this.deps.store.liveGateways();
    const limit = this.config.rate_limit.requests_per_minute;
    return { share: Math.ceil(limit / gateways), gateways };
  }

  private takeRate(key_id: string): void {
    const { share, gateways } = this.rateShare();
    this.limiter.setMax(share);
    const rate = this.limiter.take(key_id);
    if (!rate.ok) {
      const of_it =
        gateways > 1 ? ` (this gateway's share: ${share}, one of ${gateways} gateways)` : '';
      throw new ApiError(
        429,
        'rate_limit_exceeded',
        `rate limit of ${this.config.rate_limit.requests_per_minute} requests per minute${of_it} reached for this key; retry after ${rate.retry_after_s} s`,
        null,
        'rate_limit_exceeded',
        {
          'retry-after': String(rate.retry_after_s),
        },
      );
    }
  }

  /** The pass-through request, when a target of this tier speaks the client's protocol natively. */
  private nativeRequest(call: Call, stream: boolean): NativeRequest | null {
    const protocol = call.protocol;
    const cap = NATIVE_CAP_FIELD[protocol];
    if (
      !cap ||
      !call.tier.targets.some((target) => this.engines.get(target)?.protocols?.has(protocol))
    )
      return null;
    return {
      protocol,
      body: { ...call.body.original, [cap]: call.engine_request.max_output_tokens },
      stream,
      signal: call.engine_request.signal,
    };
  }

  /** A native stream, relayed as the upstream sent it; a chat target in the same tier is translated as usual. */
  private async streamedNative(res: Res, call: Call, native: NativeRequest): Promise<void> {
    let routed;
    try {
      routed = await this.router.each<{ native: NativeAnswer } | { chat: OpenedStream }>(
        call.tier.targets,
        native,
        async (engine) => {
          if (engine.native && engine.protocols?.has(native.protocol)) {
            const answer = await engine.native(native);
            if (answer.kind !== 'stream')
              throw new UpstreamError(
                'invalid_response',
                'the upstream answered a stream request with JSON',
              );
            return { native: answer };
          }
          const iterator = engine.stream(call.engine_request)[Symbol.asyncIterator]();
          const first = await iterator.next();
          return { chat: { first: first.done ? null : first.value, rest: iterator } };
        },
      );
    } catch (error) {
      const aborted = call.engine_request.signal.aborted;
      throw await this.unrouted(
        call,
        call.engine_request.prompt_tokens_estimate,
        aborted,
        true,
        error,
      );
    }
    if ('chat' in routed.value) return this.relay(res, call, routed.value.chat, routed.target);
    const value = routed.value.native as Extract<NativeAnswer, { kind: 'stream' }>;
    const sse = new SseWriter(res);
    sse.open();
    const relay = new NativeStream(call.protocol, call.tier.id);
    let failure: UpstreamError | null = null;
    try {
      if (value.first)
        for (const event of relay.push(value.first)) await sse.event(event.data, event.event);
      for (;;) {
        const next = await value.rest.next();
        if (next.done) break;
        for (const event of relay.push(next.value)) await sse.event(event.data, event.event);
      }
    } catch (error) {
      failure = asUpstreamError(error);
    } finally {
      if (failure || call.engine_request.signal.aborted)
        await value.rest.return?.().catch(() => undefined);
    }
    const aborted = call.engine_request.signal.aborted || sse.isClosed;
    const usage = relay.billed(call.engine_request.prompt_tokens_estimate);
    const settlement = await this.finish(
      call,
      usage,
      aborted ? 'client_closed' : failure ? 'stream_error' : 'ok',
      routed.target,
      true,
    );
    if (sse.isClosed) return;
    const x_aihub = this.xAihub(call, usage, settlement, routed.target);
    const events = failure
      ? call.body.streamer(call.meta).fail(toApiError(failure), x_aihub)
      : relay.finish(x_aihub);
    for (const event of events) await sse.event(event.data, event.event);
    if (call.protocol === 'completions' && !failure) await sse.done();
    sse.end();
  }

  /** The free tier: the output limit today's allowance leaves for `choices` choices, and the tokens to count against it. */
  private freeAllowance(
    tier: TierConfig,
    account_id: string,
    prompt_tokens_estimate: number,
    max_output_tokens: number,
    choices: number,
  ) {
    const allowance = tier.daily_token_allowance ?? 0;
    const now_ms = this.now_ms();
    const left =
      allowance -
      freeTokensUsed(this.deps.store.state, account_id, utcDay(now_ms)) -
      this.reservedFree(account_id);
    const retry = { 'retry-after': String(secondsToNextUtcDay(now_ms)) };
    if (left <= prompt_tokens_estimate) {
      throw new ApiError(
        429,
        'daily_token_allowance_exceeded',
        `today's allowance of ${allowance} ${tier.id} tokens is spent; it renews at 00:00 UTC, or use a paid tier`,
        null,
        'rate_limit_exceeded',
        retry,
      );
    }
    const limit = Math.min(
      max_output_tokens,
      Math.floor((left - prompt_tokens_estimate) / choices),
    );
    if (max_output_tokens > 0 && limit < 1) {
      throw new ApiError(
        429,
        'daily_token_allowance_exceeded',
        `today's allowance of ${allowance} ${tier.id} tokens cannot cover ${choices} choices; ask for fewer, or use a paid tier`,
        'n',
        'rate_limit_exceeded',
        retry,
      );
    }
    return { max_output_tokens: limit, free_tokens: prompt_tokens_estimate + limit * choices };
  }

  /** A JSON request a target of its tier speaks natively: its answer as sent, or a chat target's completion. */
  private async completeNative(
    call: Call,
    native: NativeRequest,
  ): Promise<{
    completion: UpstreamCompletion;
    target: string;
    native_body: Record<string, unknown> | null;
  }> {
    const routed = await this.router.each<{ native: NativeAnswer } | { chat: UpstreamCompletion }>(
      call.tier.targets,
      native,
      async (engine) => {
        if (!engine.native || !engine.protocols?.has(native.protocol))
          return { chat: await engine.complete(call.engine_request) };
        const answer = await engine.native(native);
        if (answer.kind !== 'json')
          throw new UpstreamError(
            'invalid_response',
            'the upstream answered a JSON request with a stream',
          );
        return { native: answer };
      },
    );
    const value = routed.value;
    if ('native' in value) {
      const native_body = (value.native as { body: Record<string, unknown> }).body;
      const completion = { choices: [] } as unknown as UpstreamCompletion;
      return { completion, target: routed.target, native_body };
    }
    return { completion: value.chat, target: routed.target, native_body: null };
  }

  private async plain(res: Res, call: Call): Promise<void> {
    let completion: UpstreamCompletion;
    let target: string;
    const native = this.nativeRequest(call, false);
    let native_body: Record<string, unknown> | null = null;
    try {
      if (native) ({ completion, target, native_body } = await this.completeNative(call, native));
      else {
        const routed = await this.router.complete(call.tier.targets, call.engine_request);
        completion = routed.value;
        target = routed.target;
      }
    } catch (error) {
      const aborted = call.engine_request.signal.aborted;
      throw await this.unrouted(
        call,
        call.engine_request.prompt_tokens_estimate,
        aborted,
        false,
        error,
      );
    }
    // The answer is counted and serialized before anything is billed on it: one that cannot
    // be (nested too deep for JSON.stringify) is an upstream failure, which costs nothing.
    let usage: Usage;
    let answer_text: string;
    try {
      if (native_body) {
        usage =
          nativeUsage(call.protocol, native_body.usage) ??
          estimated(
            call.engine_request.prompt_tokens_estimate,
            countTextTokens(
              JSON.stringify(
                native_body.output ?? native_body.content ?? native_body.choices ?? '',
              ),
            ),
          );
        answer_text = JSON.stringify(nativeJson(native_body, call.tier.id));
      } else {
        usage = completion.usage
          ? fromUpstream(completion.usage)
          : estimated(call.engine_request.prompt_tokens_estimate, countCompletion(completion));
        answer_text = JSON.stringify(call.body.json(completion, usage, call.meta));
      }
    } catch (error) {
      await this.finish(call, ZERO, 'upstream_error', target, false);
      throw new ApiError(
        502,
        'upstream_error',
        `the upstream's answer could not be read (${(error as Error).message.slice(0, 100)})`,
        null,
        'api_error',
      );
    }
    const status: UsageStatus = call.engine_request.signal.aborted ? 'client_closed' : 'ok';
    const settlement = await this.finish(call, usage, status, target, false);
    if (res.destroyed) return;
    // x_aihub last, as the settlement made it.
    const text = call.body.bill_in_body
      ? `${answer_text.slice(0, -1)},"x_aihub":${JSON.stringify(this.xAihub(call, usage, settlement, target))}}`
      : answer_text;
    this.answerJson(res, call, settlement, text);
  }

  /** A non-streamed answer, with its bill in the headers. */
  private answerJson(res: Res, call: Settling, settlement: Settlement, text: string): void {
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      ...this.billHeaders(call, settlement),
    });
    res.end(text);
  }

  /**
   * Settles a request no target answered and returns the error for the client. Nothing was
   * generated for it; a client that left pays for its prompt, which the upstream read.
   */
  private async unrouted(
    call: Settling,
    prompt_tokens_estimate: number,
    aborted: boolean,
    stream: boolean,
    error: unknown,
  ): Promise<ApiError> {
    await this.finish(
      call,
      aborted ? estimated(prompt_tokens_estimate, 0) : ZERO,
      aborted ? 'client_closed' : 'upstream_error',
      null,
      stream,
    );
    return toApiError(error);
  }

  /** The bill of a non-streamed answer, for clients that cannot read an extra body field. */
  private billHeaders(call: Settling, settlement: Settlement): Record<string, string> {
    return {
      'x-aihub-cost': String(microsToUnits(settlement.cost_micros)),
      'x-aihub-balance': String(microsToUnits(settlement.balance_micros)),
      'x-aihub-request-id': call.request_id,
    };
  }

  private async streamed(res: Res, call: Call): Promise<void> {
    const native = this.nativeRequest(call, true);
    if (native) return this.streamedNative(res, call, native);
    let opened: OpenedStream;
    let target: string;
    try {
      const routed = await this.router.stream(call.tier.targets, call.engine_request);
      opened = routed.value;
      target = routed.target;
    } catch (error) {
      const aborted = call.engine_request.signal.aborted;
      throw await this.unrouted(
        call,
        call.engine_request.prompt_tokens_estimate,
        aborted,
        true,
        error,
      );
    }
    await this.relay(res, call, opened, target);
  }

  /** Relays an opened chat stream through the protocol's stream presenter, then settles. */
  private async relay(res: Res, call: Call, opened: OpenedStream, target: string): Promise<void> {
    const sse = new SseWriter(res);
    sse.open();
    const presenter = call.body.streamer(call.meta);
    const generated: string[] = [];
    // An upstream that streams far past the output cap is broken; stop reading rather than buffer it.
    const generated_limit_chars = call.engine_request.max_output_tokens * 64 + 65_536;
    let generated_chars = 0;
    let upstream_usage: UpstreamUsage | null = null;
    let failure: UpstreamError | null = null;

    const send = async (events: SseOut[]): Promise<void> => {
      for (const event of events) await sse.event(event.data, event.event);
    };
    const relay = async (chunk: UpstreamChunk): Promise<void> => {
      if (chunk.usage) upstream_usage = chunk.usage;
      const choices = chunk.choices;
      if (choices) {
        for (const choice of choices) {
          const delta = choice.delta;
          if (delta) {
            if (typeof delta.content === 'string') generated.push(delta.content);
            const tool_calls = (delta as { tool_calls?: unknown }).tool_calls;
            if (tool_calls) generated.push(toolCallText(tool_calls));
            generated_chars += generated.at(-1)?.length ?? 0;
          }
        }
      }
      if (generated_chars > generated_limit_chars) {
        throw new UpstreamError(
          'invalid_response',
          `the upstream streamed far more than the ${call.engine_request.max_output_tokens} tokens asked for`,
        );
      }
      await send(presenter.chunk(chunk));
    };

    try {
      await send(presenter.start());
      if (opened.first) await relay(opened.first);
      for (;;) {
        const next = await opened.rest.next();
        if (next.done) break;
        await relay(next.value);
      }
    } catch (error) {
      failure = asUpstreamError(error);
    } finally {
      if (failure || call.engine_request.signal.aborted)
        await opened.rest.return?.().catch(() => undefined);
    }

    const aborted = call.engine_request.signal.aborted || sse.isClosed;
    const usage_from_upstream = upstream_usage !== null && !failure && !aborted;
    const usage: Usage =
      upstream_usage && usage_from_upstream
        ? fromUpstream(upstream_usage)
        : estimated(
            call.engine_request.prompt_tokens_estimate,
            countTextTokens(generated.join('')),
          );
    const status: UsageStatus = aborted ? 'client_closed' : failure ? 'stream_error' : 'ok';
    const settlement = await this.finish(call, usage, status, target, true);
    if (sse.isClosed) return;

    const x_aihub = this.xAihub(call, usage, settlement, target);
    if (failure) {
      await send(presenter.fail(toApiError(failure), x_aihub));
      sse.end();
      return;
    }
    await send(presenter.finish(usage, usage_from_upstream ? upstream_usage : null, x_aihub));
    if (presenter.done_marker) await sse.done();
    sse.end();
  }

  /** Settles the bill and records usage; the caller answers only after this resolves (durable). */
  private async finish(
    call: Settling,
    usage: Usage,
    status: UsageStatus,
    target: string | null,
    stream: boolean,
  ): Promise<Settlement> {
    const settlement = await settle(
      this.deps.store,
      call.reservation,
      {
        ...usage,
        status,
        target,
        stream,
        protocol: call.protocol,
        latency_ms: performance.now() - call.started_ms,
      },
      this.now_ms(),
    );
    this.metrics.settled(
      call.tier.id,
      call.protocol,
      status,
      stream,
      usage.prompt_tokens,
      usage.completion_tokens,
      settlement.cost_micros,
    );
    return settlement;
  }

  private xAihub(
    call: Settling,
    usage: Usage,
    settlement: Settlement,
    target: string | null,
  ): XAihub {
    return {
      request_id: call.request_id,
      target,
      tier: call.tier.tier,
      cost: microsToUnits(settlement.cost_micros),
      balance: microsToUnits(settlement.balance_micros),
      currency: this.currency,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      cached_tokens: usage.cached_tokens ?? 0,
      reasoning_tokens: usage.reasoning_tokens ?? 0,
      usage: usage.estimated ? 'estimated' : 'reported',
      // The part of `cost` the wallet could not pay: owed, and paid first from the next credit.
      ...(settlement.receivable_micros > 0
        ? { receivable: microsToUnits(settlement.receivable_micros) }
        : {}),
    };
  }

  private readonly reserved_free = new Map<string, number>();
  private reservedFree(account_id: string): number {
    return this.reserved_free.get(account_id) ?? 0;
  }
  private addReservedFree(account_id: string, tokens: number): void {
    const total = this.reservedFree(account_id) + tokens;
    if (total === 0) this.reserved_free.delete(account_id);
    else this.reserved_free.set(account_id, total);
  }

  /** Anthropic's token count: free, but behind the same key and rate limit as a request. */
  async countTokens(req: Req, res: Res, locals: Locals): Promise<void> {
    const { key } = this.auth(req, locals);
    this.takeRate(key.id);
    const raw = await readJson(req, this.config.body_limit_bytes);
    const model = (raw as { model?: unknown } | null)?.model;
    if (typeof model === 'string' && !isTierId(model))
      throw new ApiError(
        404,
        'model_not_found',
        `the model \`${model.slice(0, 100)}\` does not exist; use one of ${TIER_IDS.join(', ')}`,
        'model',
        'invalid_request_error',
      );
    sendJson(res, 200, countTokens(raw));
  }

  /** One list both SDKs read: OpenAI's `object`/`data[].id`, Anthropic's `has_more`, `first_id`, `last_id` and `data[].type`. */
  models(req: Req, res: Res, locals: Locals): void {
    this.auth(req, locals);
    sendJson(res, 200, {
      object: 'list',
      data: TIER_IDS.map((id) => this.modelEntry(this.config.models[id])),
      has_more: false,
      first_id: TIER_IDS[0],
      last_id: TIER_IDS.at(-1),
    });
  }

  model(req: Req, res: Res, locals: Locals, id: string): void {
    this.auth(req, locals);
    if (!isTierId(id))
      throw new ApiError(
        404,
        'model_not_found',
        `the model \`${id.slice(0, 100)}\` does not exist; use one of ${TIER_IDS.join(', ')}`,
        'model',
        'invalid_request_error',
      );
    sendJson(res, 200, this.modelEntry(this.config.models[id]));
  }

  private modelEntry(tier: TierConfig) {
    return {
      id: tier.id,
      object: 'model',
      type: 'model',
      display_name: `AIHub ${tier.tier} (${tier.id})`,
      created_at: new Date(MODELS_CREATED * 1000).toISOString(),
      created: MODELS_CREATED,
      owned_by: 'aihub',
      tier: tier.tier,
      pricing: {
        input_per_million: microsToUnits(tier.input_micros_per_million),
        cached_input_per_million: microsToUnits(tier.cached_input_micros_per_million),
        output_per_million: microsToUnits(tier.output_micros_per_million),
        currency: this.currency,
      },
      context_window: tier.context_window,
      max_output_tokens: tier.max_output_tokens,
      ...(tier.daily_token_allowance !== null
        ? { daily_token_allowance: tier.daily_token_allowance }
        : {}),
    };
  }

  async balance(req: Req, res: Res, locals: Locals): Promise<void> {
    const { account } = this.auth(req, locals);
    // Wait for earlier commits, so the figures shown are durable ones.
    await this.deps.store.readDurable();
    const state = this.deps.store.state;
    const usage = table(state, 'usage')[account.id] ?? {
      requests: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost_micros: 0,
    };
    const now_ms = this.now_ms();
    const free = this.config.models['service-ai-free'];
    sendJson(res, 200, {
      object: 'balance',
      currency: this.currency,
      balance: microsToUnits(balanceMicros(state, account.id)),
      owed: microsToUnits(owedMicros(state, account.id)),
      usage: {
        requests: usage.requests,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.cached_tokens ?? 0,
        reasoning_tokens: usage.reasoning_tokens ?? 0,
        cost: microsToUnits(usage.cost_micros),
        // Per wire protocol, every protocol named (zeros for those not used yet).
        by_protocol: Object.fromEntries(
          PROTOCOL_NAMES.map((name) => {
            const p = usage.by_protocol?.[name];
            return [
              name,
              {
                requests: p?.requests ?? 0,
                prompt_tokens: p?.prompt_tokens ?? 0,
                completion_tokens: p?.completion_tokens ?? 0,
                cached_tokens: p?.cached_tokens ?? 0,
                reasoning_tokens: p?.reasoning_tokens ?? 0,
                cost: microsToUnits(p?.cost_micros ?? 0),
              },
            ];
          }),
        ),
      },
      ...(free.daily_token_allowance !== null
        ? {
            free_tier: {
              model: free.id,
              daily_token_allowance: free.daily_token_allowance,
              tokens_used_today: freeTokensUsed(state, account.id, utcDay(now_ms)),
              resets_in_seconds: secondsToNextUtcDay(now_ms),
            },
          }
        : {}),
    });
  }
}

/** What settling a request needs. */
interface Settling {
  reservation: Reservation;
  tier: TierConfig;
  request_id: string;
  started_ms: number;
  protocol: ProtocolName;
}

interface Call extends Settling {
  engine_request: EngineRequest;
  body: ChatCall;
  meta: AnswerMeta;
}

const ZERO: Usage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  cached_tokens: 0,
  reasoning_tokens: 0,
  estimated: false,
};

function estimated(prompt_tokens: number, completion_tokens: number): Usage {
  return {
    prompt_tokens,
    completion_tokens,
    cached_tokens: 0,
    reasoning_tokens: 0,
    estimated: true,
  };
}

/** A detail count (`prompt_tokens_details.cached_tokens`, ...) within 0..most, else 0. */
function detail(details: unknown, field: string, most: number): number {
  const value =
    details && typeof details === 'object'
      ? (details as Record<string, unknown>)[field]
      : undefined;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
    ? Math.min(value, most)
    : 0;
}

function fromUpstream(usage: UpstreamUsage): Usage {
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cached_tokens: detail(usage.prompt_tokens_details, 'cached_tokens', usage.prompt_tokens),
    reasoning_tokens: detail(
      usage.completion_tokens_details,
      'reasoning_tokens',
      usage.completion_tokens,
    ),
    estimated: false,
  };
}

/** The most any of the tier's targets may charge (a fallback may be priced above the first target). */
function worstCaseMicros(
  tier: TierConfig,
  prompt_tokens: number,
  completion_tokens: number,
): number {
  return Math.max(
    ...tier.targets.map((target) =>
      costMicros(targetPrice(tier, target), prompt_tokens, completion_tokens),
    ),
  );
}

function countCompletion(completion: UpstreamCompletion): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    if (choice.message.content) tokens += countTextTokens(choice.message.content);
    const tool_calls = (choice.message as { tool_calls?: unknown }).tool_calls;
    if (tool_calls) tokens += countTextTokens(toolCallText(tool_calls));
  }
  return tokens;
}

/** What ended a stream early, as an upstream failure. */
function asUpstreamError(error: unknown): UpstreamError {
  return error instanceof UpstreamError
    ? error
    : new UpstreamError('invalid_response', String(error), null, { cause: error });
}

function toApiError(error: unknown): ApiError {
  if (error instanceof RoutingError) {
    return new ApiError(
      error.status,
      error.code,
      error.message,
      null,
      'api_error',
      error.retry_after_s ? { 'retry-after': String(error.retry_after_s) } : {},
    );
  }
  if (error instanceof UpstreamError) {
    if (error.kind === 'rejected') return rejected(error);
    if (error.kind === 'aborted')
      return new ApiError(
        499,
        'client_closed_request',
        'the client closed the request',
        null,
        'invalid_request_error',
      );
    if (error.kind === 'timeout')
      return new ApiError(504, 'upstream_timeout', error.message, null, 'api_error');
    return new ApiError(502, 'upstream_error', error.message, null, 'api_error');
  }
  if (error instanceof StoreUnavailableError) return storeUnavailable(error);
  return error instanceof ApiError
    ? error
    : new ApiError(
        500,
        'internal_error',
        'internal error; the request id identifies it in the gateway log',
        null,
        'api_error',
      );
}

/** An upstream's 4xx: its status, code, param and message reach the client as the upstream worded them. */
function rejected(error: UpstreamError): ApiError {
  const status =
    error.status !== null && error.status >= 400 && error.status < 500 ? error.status : 400;
  const body = error.body;
  const message = body?.message ?? error.message;
  return new ApiError(
    status,
    body?.code ?? 'upstream_rejected_request',
    message,
    body?.param ?? null,
    body?.type ?? 'invalid_request_error',
  );
}

/** Reads a JSON body up to `limit_bytes` without buffering more than that. */
function readJson(req: IncomingMessage, limit_bytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit_bytes) return Promise.reject(tooLarge(limit_bytes));
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding !== 'identity') {
    return Promise.reject(
      new ApiError(
        415,
        'unsupported_encoding',
        `content-encoding ${encoding.slice(0, 40)} is not supported; send the body uncompressed`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit_bytes) {
        cleanup();
        req.resume();
        reject(tooLarge(limit_bytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      try {
        assertJsonDepth(bytes);
        resolve(parseJsonBody(bytes.toString('utf8')));
      } catch (error) {
        reject(error);
      }
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function parseJsonBody(text: string): unknown {
  if (!text.trim())
    throw new ApiError(
      400,
      'invalid_json',
      'the request body is empty; send the chat completion request as JSON',
      null,
      'invalid_request_error',
    );
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(
      400,
      'invalid_json',
      'the request body is not valid JSON',
      null,
      'invalid_request_error',
    );
  }
}

function tooLarge(limit_bytes: number): ApiError {
  return new ApiError(
    413,
    'request_too_large',
    `the request body is larger than the limit of ${limit_bytes} bytes`,
    null,
    'invalid_request_error',
    { connection: 'close' },
  );
}

/** AIHUB_RESERVATION_LEASE_MS: how long a shared chat reservation outlives a gateway that stopped renewing it. */
function leaseMs(env: NodeJS.ProcessEnv): number {
  const value = Number(env.AIHUB_RESERVATION_LEASE_MS);
  return Number.isSafeInteger(value) && value >= 100 && value <= 3_600_000
    ? value
    : DEFAULT_LEASE_MS;
}
