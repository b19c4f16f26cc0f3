package main

import (
	"io"
	"strings"

	"github.com/intake-int/intake/internal/export/kafka"
)

// consume: read a Kafka topic the Kafka sink writes (kafka.Consumer) and print it.

func init() {
	register(verb{name: "consume", summary: "read intake's messages from a Kafka topic (docs/kafka.md)", run: runConsume})
}

func runConsume(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("consume", "[--config FILE] [--brokers H:P,...] [--topic T] [--group G] [--from-end] [-n N] [--idle D] [--json]", stdout)
	cfgPath := fs.String("config", "", "take export.kafka (brokers, topics, sasl, tls) from this configuration `file`")
	brokers := fs.String("brokers", "", "seed brokers `host:port,...` (default: the configuration's export.kafka.brokers)")
	topic := fs.String("topic", "events", "`topic`: reports, events, snapshots or flows (the configured topics), or a topic's name")
	group := fs.String("group", "", "join this consumer `group` and commit what was read (default: read every partition, commit nothing)")
	fromEnd := fs.Bool("from-end", false, "only messages produced from now on (default: from the start)")
	n := fs.Int("n", 0, "stop after `N` messages (0: no limit)")
	idle := fs.Duration("idle", 0, "stop when no message came for `D` (0: until interrupted)")
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
	if *n < 0 || *idle < 0 {
		return usageErr("-n and --idle must not be negative")
	}
	ctx, cancel := runContext(0)
	defer cancel()
	_, err = kafka.Consumer{Config: k, Topics: []string{k.Topic(*topic)}, Group: *group,
		FromEnd: *fromEnd, Max: *n, Idle: *idle}.Consume(ctx, kafka.ConsumePrinter(stdout, *asJSON))
	return err
}
