//go:build tools

// Pins Jaeger v2 (module version v1.76.0 = Jaeger v2.13: the Go module keeps v1 tags) for the
// test ground's trace receiver: scripts/setup.d/60-jaeger.sh builds
// github.com/jaegertracing/jaeger/cmd/jaeger from this module into the binary cache.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
