// The model providers and their catalogue, for the gateway's CLI (`aihub-gateway providers`)
// and the extension's Add Model Provider: pure modules (zod and data only), bundled by both.
export * from './kinds.js';
export * from './tiers.js';
export * from './catalogue.js';
export * from './chain.js';
export { convertedMicrosPerMillion, perMillion } from './decimal.js';
