package cache

import "sync"

var reflectorMetrics = struct {
	once     sync.Once
	provider MetricsProvider
}{}

// SetReflectorMetricsProvider installs the process-wide provider of
// Reflector metrics. Only the first call has an effect. Like client-go
// v0.37.2, reflectors currently publish no metrics through it; it is kept so
// that code calling it compiles and behaves the same.
func SetReflectorMetricsProvider(metricsProvider MetricsProvider) {
	reflectorMetrics.once.Do(func() { reflectorMetrics.provider = metricsProvider })
}
