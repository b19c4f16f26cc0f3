package kafka

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/intake-int/intake/kafkapb"
)

// Consumer is the `intake consume` reader: what it reads (Consume reads it).
type Consumer struct {
	// Config gives the brokers and their SASL and TLS settings (export.kafka).
	Config Config
	// Topics are read together.
	Topics []string
	// Group joins this consumer group, sharing the partitions with its other members and
	// committing what was read; empty reads every partition, committing nothing.
	Group string
	// FromEnd reads only messages produced from now on (a group's committed offsets win).
	FromEnd bool
	// Max stops after this many messages (0: no limit).
	Max int
	// Idle stops when no message came for this long (0: wait until ctx ends); with a group,
	// counted from the moment the group assigned this consumer its partitions.
	Idle time.Duration
}

// Consumed is one message read: where it was, its key, and its decoded value or the reason
// it could not be decoded.
type Consumed struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Timestamp time.Time
	Msg       *kafkapb.Message
	Err       error
}

// Consume reads messages and calls fn with each until ctx ends, Max messages were read,
// Idle passed without one, or fn returns an error; it returns the number read. With a
// group, the offsets of the messages handed to fn are committed before it returns.
func (o Consumer) Consume(ctx context.Context, fn func(*Consumed) error) (int, error) {
	if len(o.Config.Brokers) == 0 {
		return 0, errors.New("kafka: no brokers")
	}
	if len(o.Topics) == 0 {
		return 0, errors.New("kafka: no topic")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(o.Config.Brokers...), kgo.ConsumeTopics(o.Topics...)}
	if o.FromEnd {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	}
	assigned := make(chan struct{})
	if o.Group != "" {
		var once sync.Once
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { once.Do(func() { close(assigned) }) }))
	} else {
		close(assigned)
	}
	auth, err := o.Config.authOpts()
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(append(opts, auth...)...)
	if err != nil {
		return 0, fmt.Errorf("kafka: %w", err)
	}
	defer cl.Close()
	n := 0
	var ferr error
	for ferr == nil && (o.Max == 0 || n < o.Max) {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if o.Idle > 0 {
			pctx, cancel = context.WithCancel(ctx)
			go func() { // the idle time runs from the group's assignment on, not its join
				select {
				case <-assigned:
				case <-pctx.Done():
					return
				}
				t := time.NewTimer(o.Idle)
				defer t.Stop()
				select {
				case <-t.C:
					cancel()
				case <-pctx.Done():
				}
			}()
		}
		fs := cl.PollRecords(pctx, max(o.Max-n, 0))
		idle := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			break
		}
		var pollErr error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && pollErr == nil {
				pollErr = fmt.Errorf("kafka: %s[%d]: %w", topic, p, err)
			}
		})
		if pollErr != nil {
			ferr = pollErr
			break
		}
		var read []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil || (o.Max > 0 && n >= o.Max) {
				return
			}
			c := Consumed{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Timestamp: r.Timestamp}
			c.Msg, c.Err = kafkapb.Decode(r.Value)
			n++
			read = append(read, r)
			ferr = fn(&c)
		})
		if o.Group != "" && len(read) > 0 {
			if err := cl.CommitRecords(context.WithoutCancel(ctx), read...); err != nil && ferr == nil {
				ferr = fmt.Errorf("kafka: commit: %w", err)
			}
		}
		if idle && len(read) == 0 {
			break
		}
	}
	if o.Group != "" {
		cl.LeaveGroup()
	}
	return n, ferr
}

// ConsumedColumns are the header of Consumed.Row's table.
var ConsumedColumns = append([]string{"TOPIC", "PART", "OFFSET"}, kafkapb.Columns...)

// Row is c as one table line (ConsumedColumns); a message that did not decode shows its
// error in the last column.
func (c *Consumed) Row() []string {
	r := []string{c.Topic, strconv.Itoa(int(c.Partition)), strconv.FormatInt(c.Offset, 10)}
	if c.Err != nil {
		return append(r, "error", "", hex.EncodeToString(c.Key), "", c.Err.Error())
	}
	return append(r, kafkapb.Row(c.Msg)...)
}

// FormatRow is a table line of fixed widths (ConsumedColumns), so that a line shows as its
// message arrives rather than when a table is complete.
func FormatRow(f []string) string {
	a := make([]any, len(ConsumedColumns))
	for i := range a {
		if i < len(f) {
			a[i] = f[i]
		} else {
			a[i] = ""
		}
	}
	return strings.TrimRight(fmt.Sprintf("%-16s %4s %8s %-8s %-19s %-44s %-28s %s", a...), " ")
}

// ConsumePrinter returns a Consume callback that prints each message to w, as one
// JSON object a line (JSONLine) or as a table line (Row) under a header it prints now.
func ConsumePrinter(w io.Writer, asJSON bool) func(*Consumed) error {
	if !asJSON {
		fmt.Fprintln(w, FormatRow(ConsumedColumns))
	}
	return func(c *Consumed) error {
		if asJSON {
			b, err := c.JSONLine()
			if err == nil {
				_, err = fmt.Fprintf(w, "%s\n", b)
			}
			return err
		}
		_, err := fmt.Fprintln(w, FormatRow(c.Row()))
		return err
	}
}

// JSONLine is c as one JSON object: topic, partition, offset, key (hex), and message (the
// protojson form) or error.
func (c *Consumed) JSONLine() ([]byte, error) {
	line := struct {
		Topic     string          `json:"topic"`
		Partition int32           `json:"partition"`
		Offset    int64           `json:"offset"`
		Key       string          `json:"key"`
		Message   json.RawMessage `json:"message,omitempty"`
		Error     string          `json:"error,omitempty"`
	}{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset, Key: hex.EncodeToString(c.Key)}
	if c.Err != nil {
		line.Error = c.Err.Error()
	} else {
		b, err := kafkapb.JSON(c.Msg)
		if err != nil {
			return nil, err
		}
		line.Message = b
	}
	return json.Marshal(&line)
}

// Topic resolves a topic argument: reports, events, snapshots and flows stand for the
// topics of k; anything else is a topic's name.
func (k *Config) Topic(name string) string {
	switch name {
	case "reports":
		return k.Topics.Reports
	case "events":
		return k.Topics.Events
	case "snapshots":
		return k.Topics.Snapshots
	case "flows":
		return k.Topics.Flows
	}
	return name
}
