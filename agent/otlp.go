package agent

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promotel "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// PushOTLP pushes the agent's metrics to an OpenTelemetry collector every
// cfg.Interval, translated from Prometheus' model by OpenTelemetry's
// Prometheus bridge (counters become monotonic sums, gauges gauges,
// histograms explicit-bucket histograms, summaries summaries), until stop
// is called; stop pushes once more and waits for it. Serve calls it when
// the config has an OTLP section.
func (a *Agent) PushOTLP(cfg *OTLPConfig) (stop func(context.Context) error, err error) {
	if cfg == nil {
		return nil, fmt.Errorf("otlp: no config")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("otlp endpoint: %w", err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/metrics"
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(u.String())}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(cfg.Headers))
	}
	exp, err := otlpmetrichttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	iv := time.Duration(cfg.Interval)
	if iv == 0 {
		iv = DefaultOTLPInterval
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(a); err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(iv),
		sdkmetric.WithProducer(promotel.NewMetricProducer(promotel.WithGatherer(reg))))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	return mp.Shutdown, nil
}
