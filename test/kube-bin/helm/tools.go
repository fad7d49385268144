//go:build tools

// Package tools pins helm.sh/helm/v3 so `go build helm.sh/helm/v3/cmd/helm` resolves inside this
// module. Nothing here is compiled.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
