// The routes of issue #28 for GET /openapi.json (the business's books and network): the
// distribution network and commission schemes, the tax documents, DMT under RBI's 2024
// framework, PAN verification variants; built from the same zod schemas the routes parse with.
import type { RouteDoc } from '../http/openapi.js';
import type { PaymentsConfig } from './config.js';
import { remitterKycBody, remitterLevelBody, transferOtpBody } from './dmt/schemas.js';
import {
  assignBody,
  fundBody,
  networkBody,
  retailerBody,
  retailersQuery,
  schemeBody,
} from './network/schemas.js';
import { panVerifyBody } from './pan/schemas.js';
import { monthQuery, quarterQuery } from './statements/schemas.js';
import { transactionsQuery } from './engine/txn-filter.js';

const api = { auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;
const DISTRIBUTOR = { 403: 'not_a_distributor: the account is not a distributor' };
const DOCUMENT = {
  status: 200,
  description:
    'JSON {document, period, operator, account, totals, by_month, rows}; format=csv: text/csv (header lines `# key,value`, then the rows); format=pdf: application/pdf',
};

export function booksRouteDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    ...networkDocs(),
    ...retailerMoneyDocs(),
    ...distributorSchemeDocs(),
    ...schemeAdminDocs(),
    ...statementDocs(),
    ...rbiDocs(settings),
    panDoc(),
  ];
}

function networkDocs(): RouteDoc[] {
  const tag = 'network';
  return [
    {
      ...api,
      tag,
      method: 'get',
      path: '/api/network',
      summary: "The account's place in the network (role, distributor, scheme with its slabs)",
      success: { status: 200, description: '{role, parent_id, scheme_id, retailers?, scheme}' },
    },
    {
      ...api,
      tag,
      method: 'post',
      path: '/api/network/retailers',
      summary:
        'A distributor onboards a retailer: a new account and its key (eKYC and activation as for anyone)',
      body: retailerBody,
      success: { status: 201, description: '{account_id, api_key, key_prefix, parent_id, ...}' },
      errors: { ...DISTRIBUTOR, 409: 'email taken' },
    },
    {
      ...api,
      tag,
      method: 'get',
      path: '/api/network/retailers',
      summary: "The distributor's retailers with their balances",
      query: retailersQuery,
      success: { status: 200, description: '{total, page, limit, retailers}' },
      errors: DISTRIBUTOR,
    },
    {
      ...api,
      tag,
      method: 'put',
      path: '/api/network/retailers/:account_id/scheme',
      summary:
        "Give a retailer one of the distributor's schemes (null: the default), within its margin",
      body: assignBody,
      success: { status: 200, description: 'the retailer in the network' },
      errors: {
        ...DISTRIBUTOR,
        404: 'not its retailer, or no such scheme',
        409: 'scheme_above_margin',
      },
    },
  ];
}

function retailerMoneyDocs(): RouteDoc[] {
  const tag = 'network';
  return [
    {
      ...api,
      tag,
      method: 'get',
      path: '/api/network/retailers/:account_id/transactions',
      summary: "A retailer's transactions, each with the distributor's override",
      query: transactionsQuery,
      success: { status: 200, description: '{total, page, limit, transactions}' },
      errors: { ...DISTRIBUTOR, 404: 'not its retailer' },
    },
    {
      ...api,
      tag,
      method: 'post',
      path: '/api/network/funds',
      summary: "Move money from the distributor's wallet into a retailer's, once per reference",
      body: fundBody,
      success: {
        status: 200,
        description:
          '{retailer_id, amount, reference, duplicate, posting_ids, balance, retailer_balance}',
      },
      errors: {
        ...DISTRIBUTOR,
        402: 'insufficient_balance',
        404: 'not its retailer',
        409: 'reference_conflict',
      },
    },
  ];
}

function distributorSchemeDocs(): RouteDoc[] {
  const tag = 'network';
  return [
    {
      ...api,
      tag,
      method: 'get',
      path: '/api/network/schemes',
      summary: "The distributor's own schemes",
      query: retailersQuery,
      success: { status: 200, description: '{total, page, schemes}' },
      errors: DISTRIBUTOR,
    },
    {
      ...api,
      tag,
      method: 'post',
      path: '/api/network/schemes',
      summary:
        'A scheme for its retailers: slabs by service, operator and amount, flat or percent with a cap; never above its own',
      body: schemeBody,
      success: { status: 201, description: 'the scheme' },
      errors: { ...DISTRIBUTOR, 409: 'scheme_above_margin (names where)' },
    },
    {
      ...api,
      tag,
      method: 'put',
      path: '/api/network/schemes/:scheme_id',
      summary: "Replace one of the distributor's schemes",
      body: schemeBody,
      success: { status: 200, description: 'the scheme' },
      errors: {
        ...DISTRIBUTOR,
        404: 'no such scheme of this distributor',
        409: 'scheme_above_margin',
      },
    },
  ];
}

function schemeAdminDocs(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'get',
      path: '/admin/schemes',
      summary: 'Every commission scheme (the default one beside them)',
      query: retailersQuery,
      success: { status: 200, description: '{object: "list", total, default, data}' },
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/schemes',
      summary: 'A commission scheme of the administrator',
      body: schemeBody,
      success: { status: 201, description: 'the scheme' },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/schemes/:scheme_id',
      summary: 'One scheme (default: the catalogue rates)',
      success: { status: 200, description: 'the scheme' },
    },
    {
      ...admin,
      method: 'put',
      path: '/admin/schemes/:scheme_id',
      summary: 'Replace a scheme (future transactions only)',
      body: schemeBody,
      success: { status: 200, description: 'the scheme' },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/accounts/:id/network',
      summary: "An account's place in the network, its scheme and (a distributor) its retailers",
      query: retailersQuery,
      success: { status: 200, description: '{role, parent_id, scheme_id, scheme, retailers?}' },
    },
    {
      ...admin,
      method: 'put',
      path: '/admin/accounts/:id/network',
      summary: "Set an account's role (distributor: approved eKYC), distributor and scheme",
      body: networkBody,
      success: { status: 200, description: '{role, parent_id, scheme_id, retailers?}' },
      errors: { 409: 'kyc_not_approved, or has_retailers' },
    },
    {
      ...admin,
      method: 'put',
      path: '/admin/dmt/remitters/:account_id/:mobile/level',
      summary: "A verified remitter's KYC level (its monthly and per-transfer limits)",
      body: remitterLevelBody,
      success: { status: 200, description: 'the remitter' },
      errors: { 409: 'remitter_kyc_required' },
    },
  ];
}

function statementDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'reports',
      method: 'get',
      path: '/api/reports/commission-statement',
      summary:
        "The month's commission statement and tax-invoice summary: commissions and overrides (gross, TDS, net, slab) and fees (taxable value, CGST, SGST, IGST), per transaction and per month (account_id: a distributor's retailer)",
      query: monthQuery,
      success: DOCUMENT,
    },
    {
      ...api,
      tag: 'reports',
      method: 'get',
      path: '/api/reports/tds-statement',
      summary:
        'The TDS withheld from the account under section 194H in a quarter of a financial year',
      query: quarterQuery,
      success: DOCUMENT,
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/reports/commission-statement',
      summary: "An account's commission statement (account_id required)",
      query: monthQuery,
      success: DOCUMENT,
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/reports/tds-statement',
      summary: "A quarter's TDS: one account's (account_id), or per deductee across accounts",
      query: quarterQuery,
      success: DOCUMENT,
    },
  ];
}

function rbiDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/remitter/kyc',
      summary:
        "Verify the remitter's officially valid document once (RBI's 2024 framework; before the first transfer)",
      body: remitterKycBody,
      success: {
        status: 200,
        description: 'the remitter with kyc {document_type, document_number (masked), level}',
      },
      errors: {
        400: 'invalid_document',
        422: 'kyc_not_verified, remitter_not_verified',
        503: 'providers_unavailable',
      },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/transact/otp',
      summary:
        'Send the OTP that confirms one transfer (the parts it will be split into are shown)',
      body: transferOtpBody(settings.dmt),
      success: {
        status: 200,
        description: '{otp_ref, otp_expires_at, sandbox_otp?, parts, per_txn_limit, kyc_level}',
      },
      errors: { 422: 'remitter_kyc_required, monthly_limit_exceeded', 429: 'otp_rate_limited' },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'get',
      path: '/api/dmt/transfers/:parent_id',
      summary: 'A transfer split into parts: its status from its parts, and each part',
      success: {
        status: 200,
        description: '{reference_id, amount, charges, status, sent, refunded, legs}',
      },
    },
  ];
}

function panDoc(): RouteDoc {
  return {
    ...api,
    tag: 'pan',
    method: 'post',
    path: '/api/pan/verify',
    summary:
      'PAN verification by variant: status (valid, deactivated, deleted, fake), name and date-of-birth match flags, Aadhaar seeding; one fee per variant',
    body: panVerifyBody,
    success: {
      status: 200,
      description:
        '{status: true, data: {pan, variant, pan_status, valid, type, name_match?, dob_match?, aadhaar_seeding?, name?}, txn_id, fee, tax}',
    },
  };
}
