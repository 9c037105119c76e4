// What a payment earns and what its fee carries, decided when it is accepted and kept on its
// transaction (so a scheme edited later does not change what a pending payment will post):
// the account's commission by its scheme (the default scheme: the operator and biller
// catalogue's rates), its distributor's override (the distributor's scheme minus the
// retailer's, on the same transaction), the TDS withheld from each at the payee's rate, and
// the GST split of the fee at the account's place of supply.
import type { PaymentService } from '../../providers/types.js';
import type { Row, TableName } from '../../store/state.js';
import type { PaymentsConfig } from '../config.js';
import type { Earning } from '../engine/tables.js';
import { gstSplit, gstinState, tdsMicros, tdsRateBp, type TaxSplit } from '../engine/tax.js';
import { DEFAULT_SCHEME_ID, commissionOf, type CommissionScheme } from './schemes.js';
import type { NetworkMember } from './tables.js';

export interface Reader {
  get<T extends TableName>(name: T, id: string): Row<T> | undefined;
}

export interface QuoteRequest {
  account_id: string;
  service: PaymentService;
  /** Recharge: the operator_id; bills: the biller_id; DMT: IMPS, NEFT or penny_drop; PAN: the variant. */
  operator: string;
  /** What the commission is a share of. */
  amount_micros: number;
  /** The fee charged (GST included): charges, or the amount itself for a fee-only service. */
  fee_micros: number;
}

export interface Quote {
  commission_micros: number;
  earning?: Earning;
  override?: Earning;
  tax?: TaxSplit;
}

/** The default scheme: a slab per operator and per biller at its catalogue rate. */
export function defaultScheme(settings: PaymentsConfig): CommissionScheme {
  const at = new Date(0).toISOString();
  return {
    id: DEFAULT_SCHEME_ID,
    name: 'Default (the operator and biller catalogue)',
    owner_id: null,
    created_at: at,
    updated_at: at,
    slabs: [
      ...settings.operators.map((o) => ({
        id: `op${o.operator_id}`,
        service: 'recharge' as const,
        operator: String(o.operator_id),
        min_micros: 0,
        max_micros: null,
        kind: 'percent' as const,
        value: o.commission_bp,
        cap_micros: null,
      })),
      ...settings.bills.billers.map((b) => ({
        id: `biller-${b.biller_id}`,
        service: 'bills' as const,
        operator: b.biller_id,
        min_micros: 0,
        max_micros: null,
        kind: 'percent' as const,
        value: b.commission_pct,
        cap_micros: null,
      })),
    ],
  };
}

export class Pricing {
  readonly default_scheme: CommissionScheme;
  readonly operator_state: string;
  /**
   * The GST rate of the fees: the configured rate when the operator is registered (has a
   * GSTIN), else 0: an unregistered supplier charges no GST and issues bills of supply
   * (CGST Act s.24/s.31(3)(c), CGST Rules, rule 49), and its fees are split at 0 %.
   */
  readonly gst_rate_bp: number;

  constructor(private readonly settings: PaymentsConfig) {
    this.default_scheme = defaultScheme(settings);
    const operator = settings.tax.operator;
    this.operator_state = operator.state ?? gstinState(operator.gstin) ?? '29';
    this.gst_rate_bp = operator.gstin ? settings.tax.gst.rate : 0;
  }

  member(reader: Reader, account_id: string): NetworkMember | undefined {
    return reader.get('network', account_id);
  }

  /** The scheme an account earns by: its own, or the default. */
  schemeOf(reader: Reader, account_id: string): CommissionScheme {
    const id = this.member(reader, account_id)?.scheme_id;
    return (id ? reader.get('commission_schemes', id) : undefined) ?? this.default_scheme;
  }

  /** The account's PAN, GSTIN and state as its eKYC gave them (null when not on record). */
  taxIdentity(reader: Reader, account_id: string) {
    const kyc = reader.get('kyc_submissions', account_id);
    return {
      pan: kyc?.pan_number ?? null,
      gstin: kyc?.gstin ?? null,
      state: kyc?.state ?? gstinState(kyc?.gstin) ?? null,
      name: kyc?.name ?? null,
      address: kyc?.address ?? null,
    };
  }

  /**
   * Reads every row a quote for `account_id` may read (its network row and scheme, its
   * parent's, both eKYC records), for a caller that loads them ahead: run inside
   * `store.read`, PostgreSQL loads those its cache lacks without stopping the event loop.
   */
  touch(reader: Reader, account_id: string): void {
    this.schemeOf(reader, account_id);
    this.taxIdentity(reader, account_id);
    const parent_id = this.member(reader, account_id)?.parent_id;
    if (parent_id) {
      this.schemeOf(reader, parent_id);
      this.taxIdentity(reader, parent_id);
    }
  }

  quote(reader: Reader, request: QuoteRequest): Quote {
    const priced = {
      service: request.service,
      operator: request.operator,
      amount_micros: request.amount_micros,
    };
    const own = commissionOf(this.schemeOf(reader, request.account_id), priced);
    const quote: Quote = { commission_micros: own.gross_micros };
    if (own.slab && own.gross_micros > 0)
      quote.earning = this.earning(reader, request.account_id, own.gross_micros, own.slab);
    const parent_id = this.member(reader, request.account_id)?.parent_id;
    const parent = parent_id ? this.member(reader, parent_id) : undefined;
    if (parent?.role === 'distributor') {
      const theirs = commissionOf(this.schemeOf(reader, parent.account_id), priced);
      const override = theirs.gross_micros - own.gross_micros;
      if (theirs.slab && override > 0)
        quote.override = this.earning(reader, parent.account_id, override, theirs.slab);
    }
    if (request.fee_micros > 0)
      quote.tax = gstSplit(
        request.fee_micros,
        this.gst_rate_bp,
        this.operator_state,
        this.taxIdentity(reader, request.account_id).state,
      );
    return quote;
  }

  private earning(reader: Reader, account_id: string, gross_micros: number, slab: string): Earning {
    const rate = tdsRateBp(this.settings.tax.tds, this.taxIdentity(reader, account_id).pan);
    return {
      account_id,
      gross_micros,
      tds_micros: tdsMicros(gross_micros, rate),
      tds_rate_bp: rate,
      slab,
    };
  }
}
