// A Prometheus histogram for the hot path, registered on a prom-client registry as a metric
// of its own. prom-client's Histogram hashes the label set on every observe() (a child from
// labels() too) and keys its buckets by the bound as a string, turning a float into text
// twice per observation: five observations per billed chat cost it about 6 µs of CPU (issue
// #40). Here a label set's series is looked up once and kept by the caller; observe() is a
// bucket search and three additions. At a scrape it gives prom-client the same values its
// own Histogram gives (cumulative buckets, +Inf, sum and count, `le` first), so /metrics reads
// exactly as before (test/unit/telemetry/histogram.test.ts compares the two texts).
import type { Registry } from 'prom-client';

/** One label set's counts. */
export class HistogramSeries {
  /** Per bucket (the last one past every bound), not cumulative. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
  /** As prom-client's own histogram gives them (exemplars are not kept): null on a bucket. */
  exemplar: null | undefined;
}

export class FastHistogram<Label extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly all = new Map<string, HistogramSeries>();
  private readonly bounds: readonly number[];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label_names: readonly Label[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.bounds = [...buckets].sort((a, b) => a - b);
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of a label set, made (at zero, so that it is scraped) the first time. */
  series(labels: Readonly<Record<Label, string>>): HistogramSeries {
    let key = '';
    for (const name of this.label_names) key += `${labels[name]}\u0000`;
    let series = this.all.get(key);
    if (!series) {
      const own: Record<string, string> = {};
      for (const name of this.label_names) own[name] = String(labels[name]);
      series = new HistogramSeries(this.bounds, own);
      this.all.set(key, series);
    }
    return series;
  }

  /** What prom-client's registry reads at a scrape. */
  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: MetricValue[];
  }> {
    const values: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.all.values()) {
      let running = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        running += series.counts[i]!;
        values.push({
          labels: { le: this.bounds[i]!, ...series.labels },
          value: running,
          metricName: bucket,
          exemplar: null,
        });
      }
      values.push({
        labels: { le: '+Inf', ...series.labels },
        value: series.count,
        metricName: bucket,
        exemplar: null,
      });
      values.push({
        labels: { ...series.labels },
        value: series.sum,
        metricName: `${this.name}_sum`,
        exemplar: undefined,
      });
      values.push({
        labels: { ...series.labels },
        value: series.count,
        metricName: `${this.name}_count`,
        exemplar: undefined,
      });
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  /** Every series back to zero (the registry's resetMetrics()); the series callers hold stay theirs. */
  reset(): void {
    for (const series of this.all.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
