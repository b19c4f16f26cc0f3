package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export/kafka"
)

// consume: read a Kafka topic the Kafka sink writes (kafka.Consumer) and print it.

func init() {
	register(verb{name: "consume", summary: "read intake's messages from a Kafka topic (docs/kafka.md)", run: runConsume})
}

func runConsume(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("consume", "[--config FILE] [--brokers H:P,...] [--topic T] [--group G] [--from-end] [-n N] [--idle D] [--timeout D] [--json]", stdout)
	cfgPath := fs.String("config", "", "take export.kafka (brokers, topics, sasl, tls) from this configuration `file`; a kind it turns off is refused")
	brokers := fs.String("brokers", "", "seed brokers `host:port,...` (default: the configuration's export.kafka.brokers)")
	topic := fs.String("topic", "events", "`topic`: reports, events, snapshots or flows (the configured topics), or a topic's name")
	group := fs.String("group", "", "join this consumer `group` and commit what was read (default: read every partition, commit nothing)")
	fromEnd := fs.Bool("from-end", false, "only messages produced from now on (default: from the start)")
	n := fs.Int("n", 0, "stop after `N` messages (0: no limit)")
	idle := fs.Duration("idle", 0, "stop when no message came for `D` (0: until interrupted)")
	timeout := fs.Duration("timeout", kafka.DefaultConnectTimeout, "fail when the brokers do not answer within `D`")
	asJSON := fs.Bool("json", false, "print one JSON object per message (the message as protojson)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	k := cfg.Export.Kafka
	if *brokers != "" {
		k.Brokers = strings.Split(*brokers, ",")
	}
	if len(k.Brokers) == 0 {
		return usageErr("no brokers: --brokers, or export.kafka.brokers in --config")
	}
	if *n < 0 || *idle < 0 || *timeout <= 0 {
		return usageErr("-n and --idle must not be negative, --timeout must be positive")
	}
	if *cfgPath != "" {
		if off := kindOff(&cfg, *topic); off != "" {
			return usageErr("--topic %s: %s in %s: the collector writes no %s", *topic, off, *cfgPath, *topic)
		}
	}
	name := k.Topic(*topic)
	if name == "" {
		return usageErr("--topic %s: export.kafka.topics.%s is empty: that kind is off", *topic, *topic)
	}
	ctx, cancel := runContext(0)
	defer cancel()
	var print func(*kafka.Consumed) error // the table's header once connected, not before
	_, err = kafka.Consumer{Config: k, Topics: []string{name}, Group: *group,
		FromEnd: *fromEnd, Max: *n, Idle: *idle, Timeout: *timeout,
		Connected: func(c kafka.Connected) {
			fmt.Fprintln(stderr, consumeConnected(c, name, *group, *fromEnd))
			print = kafka.ConsumePrinter(stdout, *asJSON)
		},
	}.Consume(ctx, func(m *kafka.Consumed) error { return print(m) })
	return err
}

// kindOff says which setting of cfg keeps its collector from writing kind (reports,
// events, snapshots, flows) to Kafka, or "" when it writes it (or kind is a topic's name).
func kindOff(cfg *config.Config, kind string) string {
	k := &cfg.Export.Kafka
	switch {
	case kind != "reports" && kind != "events" && kind != "snapshots" && kind != "flows":
		return ""
	case !k.Enabled():
		return "export.kafka.brokers is empty (the Kafka sink is off)"
	case k.Topic(kind) == "":
		return "export.kafka.topics." + kind + " is empty"
	case kind == "reports" && k.Reports == "off":
		return "export.kafka.reports is off"
	case (kind == "events" || kind == "snapshots") && !cfg.Detect.Enabled:
		return "detect.enabled is false"
	case kind == "flows" && !cfg.FlowCache.Enabled:
		return "flowcache.enabled is false"
	}
	return ""
}

// consumeConnected is the line consume writes to stderr once the brokers answered: what it
// reads, where, and how.
func consumeConnected(c kafka.Connected, topic, group string, fromEnd bool) string {
	from := "from the start"
	if fromEnd {
		from = "from the end"
	}
	how := "every partition " + from + ", committing nothing"
	if group != "" {
		how = "as group " + group + " (its committed offsets; " + from + " where none), committing"
	}
	p := 0
	if len(c.Partitions) > 0 {
		p = c.Partitions[0]
	}
	return fmt.Sprintf("intake consume: connected to %s (%s); reading %s (%s) %s",
		strings.Join(c.Brokers, ","), count(len(c.Brokers), "broker"), topic, count(p, "partition"), how)
}

// count writes n and a noun, "1 broker", "3 brokers".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, plural(noun))
}
