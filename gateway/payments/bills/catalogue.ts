// The built-in BBPS biller catalogue: SAMPLE DATA, a few billers of every Bharat Connect
// category with the customer parameters, mode and amount rule each really asks for (as their
// BBPS listings showed them in 2025), so that every path can be tried against the sandbox. A
// live deployment configures its aggregator's own list (`payments.bills.billers`; BBPS has
// over 20,000 billers). Ids are stable: clients store them. The first ten billers are those
// of the catalogue from before BBPS; like every fetch-and-pay biller they are paid only
// against a fetched bill (until #35 they took a payment without one).
import type { z } from 'zod';
import type { billerSchema } from './config.js';

type BillerInput = z.input<typeof billerSchema>;
type Param = { name: string; label: string; regex: string; optional?: boolean };

const p = (name: string, label: string, regex: string, optional = false): Param => ({
  name,
  label,
  regex,
  ...(optional ? { optional } : {}),
});

const MOBILE = p('registered_mobile', 'Registered mobile number', '^[6-9]\\d{9}$');
const VEHICLE = p(
  'vehicle_number',
  'Vehicle registration number',
  '^[A-Z]{2}\\d{1,2}[A-Z]{0,3}\\d{4}$',
);

/** A biller of the catalogue: id, name, category, parameters, then what differs from fetch-and-pay, EXACT. */
function b(
  biller_id: string,
  name: string,
  category: BillerInput['category'],
  params: Param[],
  rest: Partial<BillerInput> = {},
): BillerInput {
  return { biller_id, name, category, params, ...rest };
}

/** The catalogue from before BBPS: one consumer number each. */
const LEGACY: BillerInput[] = [
  [
    'BESCOM',
    'BESCOM (Bengaluru)',
    'electricity',
    '^\\d{10}$',
    'account id (10 digits)',
    0.5,
    'Karnataka',
  ],
  [
    'MSEDCL',
    'MSEDCL (Maharashtra)',
    'electricity',
    '^\\d{12}$',
    'consumer number (12 digits)',
    0.5,
    'Maharashtra',
  ],
  [
    'TPDDL',
    'Tata Power Delhi (TPDDL)',
    'electricity',
    '^\\d{11}$',
    'CA number (11 digits)',
    0.5,
    'Delhi',
  ],
  ['BSESR', 'BSES Rajdhani', 'electricity', '^\\d{9}$', 'CA number (9 digits)', 0.5, 'Delhi'],
  ['DJB', 'Delhi Jal Board', 'water', '^\\d{10}$', 'K number (10 digits)', 0.3, 'Delhi'],
  [
    'BWSSB',
    'BWSSB (Bengaluru)',
    'water',
    '^\\d{8,10}$',
    'RR number (8 to 10 digits)',
    0.3,
    'Karnataka',
  ],
  ['IGL', 'Indraprastha Gas', 'gas', '^\\d{10}$', 'BP number (10 digits)', 0.4, 'Delhi NCR'],
  ['MGL', 'Mahanagar Gas', 'gas', '^\\d{12}$', 'CA number (12 digits)', 0.4, 'Mumbai'],
  [
    'ACTFIBER',
    'ACT Fibernet',
    'broadband',
    '^\\d{6,12}$',
    'account number (6 to 12 digits)',
    0.75,
    'All India',
  ],
  [
    'AIRTELBB',
    'Airtel Broadband',
    'broadband',
    '^\\d{10,11}$',
    'landline number with STD code',
    0.75,
    'All India',
  ],
].map(([biller_id, name, category, regex, label, commission_pct, coverage]) => ({
  biller_id: biller_id as string,
  name: name as string,
  category: category as BillerInput['category'],
  params: [p('consumer_number', label as string, regex as string)],
  commission_pct: commission_pct as number,
  coverage: coverage as string,
}));

const DIRECT = { mode: 'pay_directly' as const, amount_rule: 'ANY' as const };
const VALIDATE = { mode: 'validate_and_pay' as const, amount_rule: 'ANY' as const };

export const DEFAULT_BILLERS: BillerInput[] = [
  ...LEGACY,
  // Electricity
  b('BSESY', 'BSES Yamuna', 'electricity', [p('ca_number', 'CA number (9 digits)', '^\\d{9}$')], {
    commission_pct: 0.5,
    coverage: 'Delhi',
  }),
  b(
    'ADANIMUM',
    'Adani Electricity Mumbai',
    'electricity',
    [p('consumer_number', 'Consumer number (9 digits)', '^\\d{9}$')],
    { commission_pct: 0.4, coverage: 'Mumbai' },
  ),
  b(
    'TATAPWRMUM',
    'Tata Power Mumbai',
    'electricity',
    [p('consumer_number', 'Consumer number (12 digits)', '^\\d{12}$')],
    { commission_pct: 0.4, coverage: 'Mumbai' },
  ),
  b(
    'TNPDCL',
    'Tamil Nadu Power Distribution (TNPDCL)',
    'electricity',
    [p('consumer_number', 'Consumer number (9 to 12 digits)', '^\\d{9,12}$')],
    { commission_pct: 0.3, coverage: 'Tamil Nadu' },
  ),
  b(
    'KSEB',
    'Kerala State Electricity Board',
    'electricity',
    [p('consumer_number', 'Consumer number (13 digits)', '^\\d{13}$'), MOBILE],
    { commission_pct: 0.3, coverage: 'Kerala' },
  ),
  b(
    'UPPCLURB',
    'UPPCL (Urban)',
    'electricity',
    [p('account_number', 'Account number (10 digits)', '^\\d{10}$')],
    { commission_pct: 0.35, coverage: 'Uttar Pradesh', amount_rule: 'EXACT_AND_ABOVE' },
  ),
  b(
    'PSPCL',
    'Punjab State Power (PSPCL)',
    'electricity',
    [p('account_number', 'Account number (10 to 12 characters)', '^[A-Z0-9]{10,12}$')],
    { commission_pct: 0.3, coverage: 'Punjab' },
  ),
  b(
    'CESC',
    'CESC (Kolkata)',
    'electricity',
    [p('customer_id', 'Customer ID (11 digits)', '^\\d{11}$')],
    { commission_pct: 0.35, coverage: 'Kolkata' },
  ),
  b(
    'WBSEDCL',
    'West Bengal State Electricity (WBSEDCL)',
    'electricity',
    [p('consumer_id', 'Consumer ID (9 digits)', '^\\d{9}$')],
    { commission_pct: 0.3, coverage: 'West Bengal', partial_pay: true },
  ),
  b(
    'TGSPDCL',
    'Telangana Southern Power (TGSPDCL)',
    'electricity',
    [p('unique_service_number', 'Unique service number (9 digits)', '^\\d{9}$')],
    { commission_pct: 0.3, coverage: 'Telangana' },
  ),
  b(
    'JVVNL',
    'Jaipur Vidyut Vitran Nigam (JVVNL)',
    'electricity',
    [p('k_number', 'K number (12 digits)', '^\\d{12}$')],
    { commission_pct: 0.3, coverage: 'Rajasthan' },
  ),
  b(
    'DHBVN',
    'Dakshin Haryana Bijli Vitran Nigam',
    'electricity',
    [p('account_number', 'Account number (10 to 12 digits)', '^\\d{10,12}$')],
    { commission_pct: 0.3, coverage: 'Haryana' },
  ),
  // Water
  b(
    'HMWSSB',
    'Hyderabad Metropolitan Water Supply',
    'water',
    [p('can_number', 'CAN number (8 to 9 digits)', '^\\d{8,9}$')],
    { commission_pct: 0.3, coverage: 'Hyderabad' },
  ),
  b(
    'PMCWATER',
    'Pune Municipal Corporation Water',
    'water',
    [p('connection_number', 'Connection number', '^[A-Z0-9]{6,15}$')],
    { commission_pct: 0.25, coverage: 'Pune' },
  ),
  // Piped gas, LPG
  b(
    'ADANIGAS',
    'Adani Total Gas',
    'gas',
    [p('customer_id', 'Customer ID (10 digits)', '^\\d{10}$')],
    { commission_pct: 0.4, coverage: 'Gujarat, Haryana, Rajasthan' },
  ),
  b(
    'GUJGAS',
    'Gujarat Gas',
    'gas',
    [p('service_number', 'Service number (8 to 12 digits)', '^\\d{8,12}$')],
    { commission_pct: 0.4, coverage: 'Gujarat' },
  ),
  b('INDANE', 'Indane Gas (Indian Oil)', 'lpg', [p('lpg_id', 'LPG ID (17 digits)', '^\\d{17}$')], {
    commission_pct: 0.2,
  }),
  b('HPGAS', 'HP Gas (HPCL)', 'lpg', [p('lpg_id', 'LPG ID (17 digits)', '^\\d{17}$')], {
    commission_pct: 0.2,
  }),
  b('BHARATGAS', 'Bharatgas (BPCL)', 'lpg', [p('lpg_id', 'LPG ID (17 digits)', '^\\d{17}$')], {
    commission_pct: 0.2,
  }),
  // Broadband, landline, mobile postpaid
  b(
    'JIOFIBER',
    'JioFiber',
    'broadband',
    [p('account_number', 'Service ID (12 digits)', '^\\d{12}$')],
    { commission_pct: 0.5 },
  ),
  b(
    'HATHWAYBB',
    'Hathway Broadband',
    'broadband',
    [p('customer_id', 'Customer ID', '^[0-9A-Z]{6,12}$')],
    { commission_pct: 0.75 },
  ),
  b(
    'EXCITEL',
    'Excitel Broadband',
    'broadband',
    [p('username', 'User name or account id', '^[A-Za-z0-9._-]{4,32}$')],
    { commission_pct: 0.75, amount_rule: 'EXACT_AND_ABOVE' },
  ),
  b(
    'BSNLLL',
    'BSNL Landline',
    'landline',
    [
      p('phone_number', 'Number with STD code (11 digits)', '^0\\d{10}$'),
      p('account_number', 'Account number (10 digits)', '^\\d{10}$'),
    ],
    { commission_pct: 0.5 },
  ),
  b(
    'AIRTELLL',
    'Airtel Landline',
    'landline',
    [p('phone_number', 'Number with STD code (11 digits)', '^0\\d{10}$')],
    { commission_pct: 0.5 },
  ),
  b(
    'AIRTELPOST',
    'Airtel Postpaid',
    'postpaid',
    [p('mobile_number', 'Mobile number', '^[6-9]\\d{9}$')],
    { commission_pct: 1, amount_rule: 'ANY' },
  ),
  b('JIOPOST', 'Jio Postpaid', 'postpaid', [p('mobile_number', 'Mobile number', '^[6-9]\\d{9}$')], {
    commission_pct: 0.5,
    amount_rule: 'ANY',
  }),
  b('VIPOST', 'Vi Postpaid', 'postpaid', [p('mobile_number', 'Mobile number', '^[6-9]\\d{9}$')], {
    commission_pct: 1,
    amount_rule: 'ANY',
  }),
  b(
    'BSNLPOST',
    'BSNL Mobile Postpaid',
    'postpaid',
    [
      p('mobile_number', 'Mobile number', '^[6-9]\\d{9}$'),
      p('account_number', 'Account number (10 digits)', '^\\d{10}$', true),
    ],
    { commission_pct: 1, amount_rule: 'ANY' },
  ),
  // DTH, cable
  b(
    'TATAPLAYBB',
    'Tata Play (BBPS)',
    'dth',
    [p('subscriber_id', 'Subscriber ID (10 digits, starts with 1)', '^1\\d{9}$')],
    { commission_pct: 2.5, ...VALIDATE },
  ),
  b(
    'DISHTVBB',
    'Dish TV (BBPS)',
    'dth',
    [p('vc_number', 'VC number (11 digits, starts with 0)', '^0\\d{10}$')],
    { commission_pct: 2.5, ...VALIDATE },
  ),
  b(
    'HATHWAYCTV',
    'Hathway Digital Cable',
    'cable_tv',
    [p('customer_id', 'Customer ID', '^[0-9A-Z]{6,12}$')],
    { commission_pct: 1 },
  ),
  b(
    'GTPL',
    'GTPL Hathway Cable',
    'cable_tv',
    [p('customer_id', 'Customer ID (8 to 10 digits)', '^\\d{8,10}$')],
    { commission_pct: 1 },
  ),
  // FASTag
  b('ICICIFT', 'ICICI Bank FASTag', 'fastag', [VEHICLE], {
    commission_pct: 0.2,
    ...VALIDATE,
    min_amount: 100,
    max_amount: 100_000,
  }),
  b('HDFCFT', 'HDFC Bank FASTag', 'fastag', [VEHICLE], {
    commission_pct: 0.2,
    ...VALIDATE,
    min_amount: 100,
    max_amount: 100_000,
  }),
  b('SBIFT', 'SBI FASTag', 'fastag', [VEHICLE], {
    commission_pct: 0.2,
    ...VALIDATE,
    min_amount: 100,
    max_amount: 100_000,
  }),
  b('IDFCFT', 'IDFC FIRST Bank FASTag', 'fastag', [VEHICLE], {
    commission_pct: 0.2,
    ...DIRECT,
    min_amount: 100,
    max_amount: 100_000,
  }),
  // Insurance
  b(
    'LIC',
    'Life Insurance Corporation of India',
    'life_insurance',
    [
      p('policy_number', 'Policy number (9 digits)', '^\\d{9}$'),
      p('email', 'Email id', '^[^@\\s]{1,64}@[^@\\s]{1,185}$', true),
    ],
    { commission_pct: 0.1 },
  ),
  b(
    'HDFCLIFE',
    'HDFC Life Insurance',
    'life_insurance',
    [
      p('policy_number', 'Policy number (8 digits)', '^\\d{8}$'),
      p('date_of_birth', 'Date of birth (DD-MM-YYYY)', '^\\d{2}-\\d{2}-\\d{4}$'),
    ],
    { commission_pct: 0.1 },
  ),
  b(
    'ICICIPRU',
    'ICICI Prudential Life',
    'life_insurance',
    [
      p('policy_number', 'Policy number (8 digits)', '^\\d{8}$'),
      p('date_of_birth', 'Date of birth (DD-MM-YYYY)', '^\\d{2}-\\d{2}-\\d{4}$'),
    ],
    { commission_pct: 0.1 },
  ),
  b(
    'STARHEALTH',
    'Star Health Insurance',
    'health_insurance',
    [p('policy_number', 'Policy number', '^[A-Z0-9/]{10,30}$')],
    { commission_pct: 0.1, amount_rule: 'EXACT_AND_ABOVE' },
  ),
  b(
    'BAJAJGEN',
    'Bajaj Allianz General Insurance',
    'insurance',
    [p('policy_number', 'Policy number', '^[A-Z0-9-]{8,25}$'), MOBILE],
    { commission_pct: 0.1 },
  ),
  // Loans, credit cards
  b(
    'BAJAJFIN',
    'Bajaj Finance',
    'loan_repayment',
    [p('loan_number', 'Loan account number', '^[A-Z0-9]{8,20}$')],
    { commission_pct: 0.1, partial_pay: true, amount_rule: 'EXACT_AND_ABOVE' },
  ),
  b(
    'MUTHOOT',
    'Muthoot Finance',
    'loan_repayment',
    [p('loan_number', 'Loan account number (16 digits)', '^\\d{16}$')],
    { commission_pct: 0.1, partial_pay: true },
  ),
  b(
    'TATACAP',
    'Tata Capital',
    'loan_repayment',
    [p('loan_number', 'Loan account number', '^[A-Z0-9]{8,20}$')],
    { commission_pct: 0.1, amount_rule: 'EXACT_AND_ABOVE' },
  ),
  b(
    'HOMECREDIT',
    'Home Credit India',
    'loan_repayment',
    [p('contract_number', 'Contract number (10 digits)', '^\\d{10}$')],
    { commission_pct: 0.1, partial_pay: true },
  ),
  b(
    'HDFCCC',
    'HDFC Bank Credit Card',
    'credit_card',
    [p('card_last4', 'Last 4 digits of the card', '^\\d{4}$'), MOBILE],
    { commission_pct: 0, amount_rule: 'ANY', partial_pay: true, max_amount: 1_000_000 },
  ),
  b(
    'SBICARD',
    'SBI Card',
    'credit_card',
    [p('card_last4', 'Last 4 digits of the card', '^\\d{4}$'), MOBILE],
    { commission_pct: 0, amount_rule: 'ANY', partial_pay: true, max_amount: 1_000_000 },
  ),
  b(
    'ICICICC',
    'ICICI Bank Credit Card',
    'credit_card',
    [p('card_last4', 'Last 4 digits of the card', '^\\d{4}$'), MOBILE],
    { commission_pct: 0, amount_rule: 'ANY', partial_pay: true, max_amount: 1_000_000 },
  ),
  b(
    'AXISCC',
    'Axis Bank Credit Card',
    'credit_card',
    [p('card_last4', 'Last 4 digits of the card', '^\\d{4}$'), MOBILE],
    { commission_pct: 0, amount_rule: 'ANY', partial_pay: true, max_amount: 1_000_000 },
  ),
  // Municipal
  b(
    'BBMPTAX',
    'BBMP Property Tax (Bengaluru)',
    'municipal_tax',
    [
      p('property_id', 'Property ID (PID)', '^[0-9-]{6,20}$'),
      p('financial_year', 'Financial year (YYYY-YY)', '^\\d{4}-\\d{2}$'),
    ],
    { commission_pct: 0.1, coverage: 'Bengaluru' },
  ),
  b(
    'MCGMTAX',
    'MCGM Property Tax (Mumbai)',
    'municipal_tax',
    [p('account_number', 'Property account number', '^[A-Z0-9]{8,20}$')],
    { commission_pct: 0.1, coverage: 'Mumbai', partial_pay: true },
  ),
  b(
    'GHMCTAX',
    'GHMC Property Tax (Hyderabad)',
    'municipal_tax',
    [p('ptin', 'PTIN (10 digits)', '^\\d{10}$')],
    { commission_pct: 0.1, coverage: 'Hyderabad' },
  ),
  b(
    'NDMCSVC',
    'NDMC Services (Delhi)',
    'municipal_services',
    [p('consumer_number', 'Consumer number', '^\\d{7,10}$')],
    { commission_pct: 0.1, coverage: 'Delhi' },
  ),
  // Education, subscription, society, hospital, clubs
  b(
    'DPSFEES',
    'Delhi Public School Fees (sample)',
    'education_fees',
    [
      p('admission_number', 'Admission number', '^[A-Z0-9/]{4,20}$'),
      p('student_name', 'Student name', '^[A-Za-z .]{2,60}$', true),
    ],
    { commission_pct: 0, amount_rule: 'EXACT_AND_ABOVE' },
  ),
  b(
    'IGNOUFEES',
    'IGNOU Fees',
    'education_fees',
    [p('enrolment_number', 'Enrolment number (9 to 10 digits)', '^\\d{9,10}$')],
    { commission_pct: 0, ...DIRECT },
  ),
  b('TATAPLAYBINGE', 'Tata Play Binge', 'subscription', [MOBILE], {
    commission_pct: 1,
    ...DIRECT,
    max_amount: 5_000,
  }),
  b('HUNGAMA', 'Hungama Music', 'subscription', [MOBILE], {
    commission_pct: 1,
    ...DIRECT,
    max_amount: 2_000,
  }),
  b(
    'MYGATESOC',
    'Housing Society Maintenance (via MyGate, sample)',
    'housing_society',
    [p('flat_id', 'Society and flat id', '^[A-Z0-9-]{4,24}$')],
    { commission_pct: 0.2, partial_pay: true },
  ),
  b(
    'APOLLOHOSP',
    'Apollo Hospitals',
    'hospital',
    [
      p('uhid', 'UHID', '^[A-Z0-9]{6,16}$'),
      p('bill_number', 'Bill number', '^[A-Z0-9/-]{4,20}$', true),
    ],
    { commission_pct: 0.1 },
  ),
  b(
    'ROTARYCLUB',
    'Rotary Club Membership (sample)',
    'clubs_associations',
    [p('member_id', 'Member id', '^[A-Z0-9]{4,12}$')],
    { commission_pct: 0.2, amount_rule: 'EXACT_AND_ABOVE' },
  ),
  // Deposits, pension, meters, donations, rent, transit, challans
  b(
    'IPPBRD',
    'India Post Recurring Deposit (sample)',
    'recurring_deposit',
    [p('rd_account', 'RD account number (10 digits)', '^\\d{10}$')],
    { commission_pct: 0, ...VALIDATE, max_amount: 100_000 },
  ),
  b(
    'NPSPROTEAN',
    'NPS Contribution (Protean)',
    'nps',
    [p('pran', 'PRAN (12 digits)', '^\\d{12}$'), p('tier', 'Tier (1 or 2)', '^[12]$')],
    { commission_pct: 0, ...VALIDATE, min_amount: 500, max_amount: 500_000 },
  ),
  b(
    'TPDDLPRE',
    'Tata Power Delhi Prepaid Meter',
    'prepaid_meter',
    [p('meter_number', 'Meter number (8 to 12 digits)', '^\\d{8,12}$')],
    { commission_pct: 0.5, ...VALIDATE, min_amount: 100, max_amount: 20_000 },
  ),
  b(
    'GENUSPRE',
    'Genus Prepaid Meter (sample)',
    'prepaid_meter',
    [p('meter_number', 'Meter number (8 to 12 digits)', '^\\d{8,12}$')],
    { commission_pct: 0.5, ...DIRECT, min_amount: 100, max_amount: 20_000 },
  ),
  b(
    'GIVEINDIA',
    'GiveIndia Donation',
    'donation',
    [
      p('donor_mobile', 'Donor mobile number', '^[6-9]\\d{9}$'),
      p('donor_pan', 'Donor PAN (for 80G)', '^[A-Z]{5}\\d{4}[A-Z]$', true),
    ],
    { commission_pct: 0, ...DIRECT },
  ),
  b(
    'NOBROKER',
    'NoBroker Rent Payment',
    'rental',
    [
      p('tenant_mobile', 'Tenant mobile number', '^[6-9]\\d{9}$'),
      p('landlord_account', 'Landlord bank account', '^\\d{9,18}$'),
    ],
    { commission_pct: 0, ...DIRECT, max_amount: 200_000 },
  ),
  b(
    'DMRCNCMC',
    'Delhi Metro (NCMC card)',
    'ncmc',
    [p('card_number', 'Card number (16 digits)', '^\\d{16}$')],
    { commission_pct: 0.2, ...VALIDATE, min_amount: 100, max_amount: 2_000 },
  ),
  b(
    'DELHICHALLAN',
    'Delhi Traffic Police eChallan',
    'echallan',
    [p('challan_number', 'Challan number', '^[A-Z0-9]{10,24}$'), VEHICLE],
    { commission_pct: 0 },
  ),
];
