/** The slice of a prom-client `Registry` the summary reads. */
export interface MetricsSource {
  getMetricsAsJSON(): Promise<readonly MetricJson[]>;
}

interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: string | number;
  readonly values: readonly { readonly value: number; readonly labels: Readonly<Partial<Record<string, string | number>>>; readonly metricName?: string }[];
}

/** One latency histogram series, in milliseconds; percentiles are the upper bound of the bucket they fall in. */
export interface LatencyRow {
  readonly metric: string;
  readonly help: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly count: number;
  readonly meanMs: number | null;
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
}

/** One counter series that counts outcomes or failures. */
export interface OutcomeRow {
  readonly metric: string;
  readonly help: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricsSummary {
  readonly latencies: readonly LatencyRow[];
  readonly outcomes: readonly OutcomeRow[];
}

/** Counters the dashboard shows beside latencies: outcomes of turns and tool calls, and every failure count. */
const OUTCOME_COUNTER = /^palaver_(turns_total|tool_calls_total|.*(failures|errors|dead_letters|abandoned)_total)$/;

/**
 * Turn, model and tool latency and errors for the dashboard, from this process's Prometheus registry: every
 * `palaver_*_seconds` histogram as count, mean, p50 and p95, and the counters of outcomes and failures. It is one
 * process's view since its start; Prometheus scraping every process (`/metrics`) gives the whole picture.
 */
export async function summarizeMetrics(source: MetricsSource): Promise<MetricsSummary> {
  const latencies: LatencyRow[] = [];
  const outcomes: OutcomeRow[] = [];
  for (const metric of await source.getMetricsAsJSON()) {
    if (metric.type === 'histogram' && /^palaver_.*_seconds$/.test(metric.name)) latencies.push(...histogramRows(metric));
    else if (metric.type === 'counter' && OUTCOME_COUNTER.test(metric.name)) {
      for (const value of metric.values)
        if (value.value > 0) outcomes.push({ metric: metric.name, help: metric.help, labels: stringLabels(value.labels), value: value.value });
    }
  }
  return { latencies, outcomes };
}

function histogramRows(metric: MetricJson): LatencyRow[] {
  const series = new Map<string, { labels: Record<string, string>; buckets: [number, number][]; sum: number; count: number }>();
  for (const value of metric.values) {
    const { le, ...rest } = stringLabels(value.labels);
    const key = JSON.stringify(Object.entries(rest).sort());
    let entry = series.get(key);
    if (entry === undefined) series.set(key, (entry = { labels: rest, buckets: [], sum: 0, count: 0 }));
    if (value.metricName?.endsWith('_bucket') && le !== undefined) entry.buckets.push([le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), value.value]);
    else if (value.metricName?.endsWith('_sum')) entry.sum = value.value;
    else if (value.metricName?.endsWith('_count')) entry.count = value.value;
  }
  return [...series.values()]
    .filter((entry) => entry.count > 0)
    .map((entry) => {
      const buckets = entry.buckets.sort((a, b) => a[0] - b[0]);
      return {
        metric: metric.name,
        help: metric.help,
        labels: entry.labels,
        count: entry.count,
        meanMs: Math.round((entry.sum / entry.count) * 1000),
        p50Ms: quantileMs(buckets, entry.count, 0.5),
        p95Ms: quantileMs(buckets, entry.count, 0.95),
      };
    });
}

/** The upper bound of the bucket holding the q-th observation; null when that is the open +Inf bucket. */
function quantileMs(buckets: readonly [number, number][], count: number, q: number): number | null {
  const rank = q * count;
  const bucket = buckets.find(([, cumulative]) => cumulative >= rank);
  return bucket === undefined || !Number.isFinite(bucket[0]) ? null : Math.round(bucket[0] * 1000);
}

function stringLabels(labels: Readonly<Partial<Record<string, string | number>>>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).flatMap(([key, value]) => (value === undefined ? [] : [[key, String(value)]])));
}
