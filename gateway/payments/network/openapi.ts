// The distribution network's routes in GET /openapi.json (issue #25, item 13: every route a
// client can call is in the document): a distributor's own view, schemes, retailers and
// transfers under /api/network, and the admin's schemes and network placement.
import type { RouteDoc } from '../../http/openapi.js';
import { transactionsQuery } from '../engine/txn-filter.js';
import {
  assignBody,
  fundBody,
  networkBody,
  retailerBody,
  retailersQuery,
  schemeBody,
} from './schemas.js';

const api = { tag: 'network', auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;
const DISTRIBUTORS = { 403: "not_a_distributor: the key is not a distributor account's" };

/** A distributor's routes (its key), then the admin's. */
const DOCS: RouteDoc[] = [
  {
    ...api,
    method: 'get',
    path: '/api/network',
    summary:
      "This account's place in the network (role, distributor, retailers) and its commission scheme",
    success: {
      status: 200,
      description: '{status: true, data: {role, parent_id, scheme_id, retailers, scheme}}',
    },
  },
  {
    ...api,
    method: 'get',
    path: '/api/network/schemes',
    summary: "The distributor's own commission schemes",
    query: retailersQuery,
    success: { status: 200, description: '{status: true, data: {total, page, schemes}}' },
    errors: DISTRIBUTORS,
  },
  {
    ...api,
    method: 'post',
    path: '/api/network/schemes',
    summary:
      "Create a commission scheme (slabs per service, operator and amount range) for the distributor's retailers",
    body: schemeBody,
    success: { status: 201, description: '{status: true, data: the scheme}' },
    errors: DISTRIBUTORS,
  },
  {
    ...api,
    method: 'put',
    path: '/api/network/schemes/:scheme_id',
    summary: "Replace one of the distributor's schemes",
    body: schemeBody,
    success: { status: 200, description: '{status: true, data: the scheme}' },
    errors: { ...DISTRIBUTORS, 404: 'scheme_not_found' },
  },
  {
    ...api,
    method: 'post',
    path: '/api/network/retailers',
    summary: 'Register a retailer under this distributor (its API key is shown once)',
    body: retailerBody,
    success: {
      status: 201,
      description:
        '{status: true, data: {account_id, api_key, key_prefix, parent_id, services, kyc_status}}',
    },
    errors: { ...DISTRIBUTORS, 409: 'email_taken' },
  },
  {
    ...api,
    method: 'get',
    path: '/api/network/retailers',
    summary: "The distributor's retailers",
    query: retailersQuery,
    success: { status: 200, description: '{status: true, data: {total, page, retailers}}' },
    errors: DISTRIBUTORS,
  },
  {
    ...api,
    method: 'put',
    path: '/api/network/retailers/:account_id/scheme',
    summary: "Assign one of the distributor's schemes to a retailer (null: the default scheme)",
    body: assignBody,
    success: { status: 200, description: "{status: true, data: the retailer's place}" },
    errors: { ...DISTRIBUTORS, 404: 'retailer_not_found, scheme_not_found' },
  },
  {
    ...api,
    method: 'post',
    path: '/api/network/funds',
    summary: "Move money from the distributor's wallet to a retailer's, once per reference",
    body: fundBody,
    success: {
      status: 200,
      description:
        '{status: true, data: {retailer_id, amount, reference, duplicate, posting_ids, balance, retailer_balance}}',
    },
    errors: {
      ...DISTRIBUTORS,
      402: 'insufficient_balance',
      404: "retailer_not_found: not this distributor's retailer",
    },
  },
  {
    ...api,
    method: 'get',
    path: '/api/network/retailers/:account_id/transactions',
    summary: "A retailer's transactions, each with the override the distributor earned on it",
    query: transactionsQuery,
    success: {
      status: 200,
      description: '{status: true, data: {total, page, limit, transactions}}',
    },
    errors: { ...DISTRIBUTORS, 404: "retailer_not_found: not this distributor's retailer" },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/schemes',
    summary: "Commission schemes (the default one and every distributor's)",
    query: retailersQuery,
    success: { status: 200, description: '{object: "list", total, data}' },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/schemes/:scheme_id',
    summary: 'One commission scheme',
    success: { status: 200, description: 'the scheme' },
    errors: { 404: 'scheme_not_found' },
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/schemes',
    summary: 'Create a commission scheme',
    body: schemeBody,
    success: { status: 201, description: 'the scheme' },
  },
  {
    ...admin,
    method: 'put',
    path: '/admin/schemes/:scheme_id',
    summary: 'Replace a commission scheme (`default` is the scheme of accounts without one)',
    body: schemeBody,
    success: { status: 200, description: 'the scheme' },
    errors: { 404: 'scheme_not_found' },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/accounts/:id/network',
    summary: "An account's place in the network and, for a distributor, its retailers",
    query: retailersQuery,
    success: { status: 200, description: '{role, parent_id, scheme_id, retailers, ...}' },
    errors: { 404: 'account_not_found' },
  },
  {
    ...admin,
    method: 'put',
    path: '/admin/accounts/:id/network',
    summary: "Set an account's role (retailer or distributor), its distributor and its scheme",
    body: networkBody,
    success: { status: 200, description: "the account's place in the network" },
    errors: { 404: 'account_not_found', 409: 'the change would break the network' },
  },
];

export function networkRouteDocs(): RouteDoc[] {
  return DOCS;
}
