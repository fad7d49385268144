//go:build tools

// Package tools pins the Prometheus Operator so its operator and prometheus-config-reloader
// commands resolve inside this module (scripts/setup.d/62-prometheus-operator.sh builds them).
// The operator's own module cannot be built in place: its go.mod replaces pkg/apis/monitoring and
// pkg/client with directories its module archive leaves out (they are modules of their own, which
// the proxy serves). Nothing here is compiled.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
	_ "github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader"
)
