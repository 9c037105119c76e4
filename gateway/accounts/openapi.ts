import type { RouteDoc } from '../http/openapi.js';
import { nearQuery } from './key-admin.js';
import { createAccountBody, createKeyBody, listQuery, moneyBody, patchKeyBody } from './schemas.js';

const admin = { tag: 'admin', auth: 'admin' } as const;

export const accountRouteDocs: RouteDoc[] = [
  {
    ...admin,
    method: 'post',
    path: '/admin/accounts',
    summary: 'Create an account (AI on, payments off)',
    body: createAccountBody,
    success: { status: 201, description: 'the account' },
    errors: { 409: 'email taken' },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/accounts',
    summary: 'List accounts, oldest first (creation order)',
    query: listQuery,
    success: { status: 200, description: '{object: "list", total, page, limit, data}' },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/accounts/:id',
    summary: 'An account with its balance and keys',
    success: { status: 200, description: 'the account' },
    errors: { 404: 'no such account' },
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/accounts/:id/keys',
    summary: 'Create an API key (shown once)',
    body: createKeyBody,
    success: {
      status: 201,
      description:
        '{id, key, prefix, name, created_at, limit, limit_reset, models, expires_at, requests_per_minute, tokens_per_minute}',
    },
    errors: { 404: 'no such account' },
  },
  {
    ...admin,
    method: 'patch',
    path: '/admin/keys/:keyId',
    summary: "Change a key's name, limit, reset, models, expiry or rates (audited)",
    body: patchKeyBody,
    success: { status: 200, description: 'the key' },
    errors: { 404: 'no such key', 409: 'the key is revoked' },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/keys/limits',
    summary: 'Keys at or past `threshold` of their limit this period, fullest first',
    query: nearQuery,
    success: {
      status: 200,
      description:
        '{object: "list", threshold, data: [key with account_id, spent, limit_remaining, used_fraction, exceeded]}',
    },
  },
  {
    ...admin,
    method: 'delete',
    path: '/admin/keys/:keyId',
    summary: 'Revoke an API key at once',
    success: { status: 204, description: 'revoked' },
    errors: { 404: 'no such key' },
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/accounts/:id/credit',
    summary: 'Credit the wallet, once per reference',
    body: moneyBody,
    success: { status: 200, description: '{balance, currency, reference, duplicate}' },
    errors: { 404: 'no such account', 409: 'reference used for another credit' },
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/accounts/:id/debit',
    summary: 'Debit the wallet (manual adjustment), once per reference',
    body: moneyBody,
    success: { status: 200, description: '{balance, currency, reference, duplicate}' },
    errors: {
      402: 'balance too low',
      404: 'no such account',
      409: 'reference used for another debit',
    },
  },
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/healthz',
    summary: 'Liveness',
    success: { status: 200, description: '{"status":"ok"}' },
  },
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    success: { status: 200, description: 'Prometheus text format', content_type: 'text/plain' },
  },
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    success: { status: 200, description: 'OpenAPI 3.1' },
  },
];
