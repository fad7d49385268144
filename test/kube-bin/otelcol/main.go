// The test ground's trace receiver: an OpenTelemetry Collector with only what the trace tests use,
// the OTLP receiver and the file exporter (each export request as one line of OTLP JSON, which
// test/ground/trace-receiver.ts reads back as traces). scripts/setup.d/60-otelcol.sh builds it
// from the Go module proxy into the binary cache. The components are those of the collector
// release pinned in go.mod (go.opentelemetry.io/collector/otelcol); an official distribution
// (otelcol-contrib) links hundreds of components and takes far longer to build.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// Version is stamped by the setup step (-X main.Version=...) and checked before a cached binary
// is reused.
var Version = "dev"

func components() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory())
	return f, err
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "capstan-otelcol",
			Description: "OTLP receiver and file exporter for Capstan's trace tests",
			Version:     Version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{envprovider.NewFactory(), fileprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
