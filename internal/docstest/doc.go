// Package docstest holds the tests that keep the documentation true to the code: every YAML
// block of docs/*.md and the README loads with the configuration loader `intake serve
// --check` uses; docs/config.md names every key the configuration accepts and no other;
// docs/scale-out.md's three-collector recipe runs as written; the Grafana dashboard queries
// only what the InfluxDB sink writes; and deploy/'s Debian package installs (docs/deploy.md).
// It has no code of its own: the tests are the package.
package docstest
