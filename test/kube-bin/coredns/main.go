// CoreDNS with only the plugins the test node's Corefile uses (test/ground/node-config.ts):
// bind, errors, ready and kubernetes. The upstream binary links every plugin (cloud DNS
// providers, dnstap, tracing exporters...), which made it the second-longest build of the setup.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
