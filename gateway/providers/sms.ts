// Sending remitter OTPs by SMS in live mode. One small interface; the HTTP sender is
// configured (URL, field names, auth from the environment), so any SMS gateway with an HTTP
// API fits without code. In sandbox mode no SMS is sent: the OTP comes back in the answer.
import type { SmsSenderConfig } from './config.js';
import { upstreamHeaders } from './transport.js';
import { ProviderUnavailableError } from './types.js';

export interface SmsSender {
  readonly name: string;
  /** Resolves once the gateway accepted the message; rejects with ProviderUnavailableError otherwise. */
  send(mobile: string, message: string, signal?: AbortSignal): Promise<void>;
}

export class HttpSmsSender implements SmsSender {
  readonly name: string;

  constructor(
    private readonly config: SmsSenderConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = config.name;
  }

  async send(mobile: string, message: string, outer?: AbortSignal): Promise<void> {
    const values = this.values(mobile, message);
    const headers = upstreamHeaders(this.config, this.env, `SMS sender ${this.name}`);
    let url = this.config.url;
    let body: string | undefined;
    if (this.config.method === 'GET') {
      const target = new URL(url);
      for (const [field, value] of Object.entries(values)) target.searchParams.set(field, value);
      url = target.toString();
    } else {
      const document: Record<string, unknown> = Object.create(null);
      for (const [field, value] of Object.entries(values)) {
        const parts = field.split('.');
        let current = document;
        for (const part of parts.slice(0, -1))
          current = (current[part] ??= Object.create(null)) as Record<string, unknown>;
        current[parts[parts.length - 1]!] = value;
      }
      body = JSON.stringify(document);
      headers['content-type'] = 'application/json';
    }
    const signal = outer
      ? AbortSignal.any([outer, AbortSignal.timeout(this.config.timeout_ms)])
      : AbortSignal.timeout(this.config.timeout_ms);
    let response: Response;
    try {
      response = await fetch(url, {
        method: this.config.method,
        headers,
        body,
        signal,
        redirect: 'error',
      });
      await response.body?.cancel();
    } catch (error) {
      if (signal.aborted)
        throw new ProviderUnavailableError(
          'timeout',
          `SMS sender ${this.name} did not answer in ${this.config.timeout_ms} ms`,
        );
      throw new ProviderUnavailableError(
        'transport',
        `SMS sender ${this.name}: ${(error as Error).message}`,
      );
    }
    if (response.status < 200 || response.status > 299) {
      throw new ProviderUnavailableError(
        response.status >= 500 ? 'http_5xx' : 'bad_response',
        `SMS sender ${this.name} answered HTTP ${response.status}`,
      );
    }
  }

  /** The configured request fields, each filled from its source. */
  private values(mobile: string, message: string): Record<string, string> {
    const values: Record<string, string> = {};
    for (const [field, source] of Object.entries(this.config.fields)) {
      values[field] =
        source === 'mobile'
          ? mobile
          : source === 'mobile_e164'
            ? `+91${mobile}`
            : source === 'message'
              ? message
              : source.slice(6);
    }
    return values;
  }
}

export function buildSmsSender(
  config: SmsSenderConfig | undefined,
  env?: NodeJS.ProcessEnv,
): SmsSender | null {
  return config ? new HttpSmsSender(config, env) : null;
}
