// How the network is presented: a scheme with its slabs in currency units and percent, an
// account's place, a retailer as its distributor sees it. No rules here.
import { balanceMicros } from '../../ledger/ledger.js';
import type { Account, State } from '../../store/state.js';
import { microsToUnits } from '../../util/money.js';
import type { CommissionScheme, CommissionSlab } from './schemes.js';
import type { NetworkMember } from './tables.js';

export function slabView(slab: CommissionSlab) {
  return {
    id: slab.id,
    service: slab.service,
    operator: slab.operator,
    min_amount: microsToUnits(slab.min_micros),
    max_amount: slab.max_micros === null ? null : microsToUnits(slab.max_micros),
    type: slab.kind,
    value: slab.kind === 'percent' ? slab.value / 100 : microsToUnits(slab.value),
    cap: slab.cap_micros === null ? null : microsToUnits(slab.cap_micros),
  };
}

export function schemeView(scheme: CommissionScheme) {
  return {
    scheme_id: scheme.id,
    name: scheme.name,
    owner_id: scheme.owner_id,
    slabs: scheme.slabs.map(slabView),
    created_at: scheme.created_at,
    updated_at: scheme.updated_at,
  };
}

export function memberView(member: NetworkMember, retailers: number) {
  return {
    account_id: member.account_id,
    role: member.role,
    parent_id: member.parent_id,
    scheme_id: member.scheme_id ?? 'default',
    ...(member.role === 'distributor' ? { retailers } : {}),
  };
}

export function retailerView(state: State, account: Account, member: NetworkMember) {
  return {
    account_id: account.id,
    email: account.email,
    name: account.name,
    status: account.status,
    kyc_status: account.kyc_status,
    services: account.services,
    scheme_id: member.scheme_id ?? 'default',
    balance: microsToUnits(balanceMicros(state, account.id)),
    created_at: account.created_at,
  };
}
