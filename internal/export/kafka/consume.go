package kafka

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	// Timeout bounds the first exchange with the brokers, in which Consume learns the
	// cluster and checks that the topics exist (0: 10 s). Brokers that do not answer
	// within it, or a topic they do not have, end Consume with an error that says so.
	Timeout time.Duration
	// Connected, when set, is called once the brokers answered, before the first read.
	Connected func(Connected)
}

// Connected is what Consume found at the brokers before reading.
type Connected struct {
	// Brokers are the cluster's brokers as its metadata lists them, host:port.
	Brokers []string
	// Partitions is the number of partitions of each topic read, in Consumer.Topics' order.
	Partitions []int
}

// DefaultConnectTimeout is Consumer.Timeout's default.
const DefaultConnectTimeout = 10 * time.Second

// dialErrors keeps the last error dialing a broker gave (a kgo hook): a connection refused
// is the reason to report, not the deadline that ended the waiting.
type dialErrors struct {
	mu   sync.Mutex
	last error
}

func (d *dialErrors) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		d.mu.Lock()
		d.last = err
		d.mu.Unlock()
	}
}

func (d *dialErrors) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// connect asks the brokers for the topics' metadata within o.Timeout.
func (o Consumer) connect(ctx context.Context, cl *kgo.Client, dials *dialErrors) (Connected, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range o.Topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	brokers := strings.Join(o.Config.Brokers, ",")
	resp, err := req.RequestWith(mctx, cl)
	if err != nil {
		if ctx.Err() != nil {
			return Connected{}, ctx.Err()
		}
		if de := dials.err(); de != nil {
			err = de
		}
		return Connected{}, fmt.Errorf("kafka: no answer from the brokers %s within %s: %w", brokers, timeout, err)
	}
	var c Connected
	for _, b := range resp.Brokers {
		c.Brokers = append(c.Brokers, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	slices.Sort(c.Brokers)
	parts := map[string]int{}
	for _, rt := range resp.Topics {
		t := ""
		if rt.Topic != nil {
			t = *rt.Topic
		}
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return c, fmt.Errorf("kafka: topic %q does not exist on the brokers %s", t, brokers)
		case err != nil:
			return c, fmt.Errorf("kafka: topic %q: %w", t, err)
		}
		parts[t] = len(rt.Partitions)
	}
	for _, t := range o.Topics {
		c.Partitions = append(c.Partitions, parts[t])
	}
	return c, nil
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
	auth, err := o.Config.AuthOpts()
	if err != nil {
		return 0, err
	}
	dials := &dialErrors{}
	opts = append(opts, kgo.WithHooks(dials))
	cl, err := kgo.NewClient(append(opts, auth...)...)
	if err != nil {
		return 0, fmt.Errorf("kafka: %w", err)
	}
	defer cl.Close()
	conn, err := o.connect(ctx, cl, dials)
	if err != nil {
		return 0, err
	}
	if o.Connected != nil {
		o.Connected(conn)
	}
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
	row := kafkapb.Row(c.Msg)
	if ns, ok := messageTime(c.Msg); ok {
		row[1] = TimeText(ns)
	}
	return append(r, row...)
}

// TimeLayout is how consume writes a time: RFC 3339 in UTC with nanoseconds of fixed width,
// so that columns align; the layout `intake query events` prints.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// TimeText writes Unix nanoseconds in TimeLayout.
func TimeText(ns int64) string { return time.Unix(0, ns).UTC().Format(TimeLayout) }

// messageTime is the time kafkapb.Row shows of m, Unix ns: a report's receive time, an
// event's or snapshot's time, a flow record's last packet.
func messageTime(m *kafkapb.Message) (int64, bool) {
	switch b := m.GetBody().(type) {
	case *kafkapb.Message_Report:
		return b.Report.GetRecvTimeNs(), true
	case *kafkapb.Message_Event:
		return b.Event.GetTimeNs(), true
	case *kafkapb.Message_Snapshot:
		return b.Snapshot.GetTimeNs(), true
	case *kafkapb.Message_Flow:
		return b.Flow.GetLastNs(), true
	}
	return 0, false
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
	return strings.TrimRight(fmt.Sprintf("%-16s %4s %8s %-8s %-30s %-44s %-28s %s", a...), " ")
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

// JSONLine is c as one JSON object: topic, partition, offset, key (hex), and message (its
// protojson form, made readable: readableJSON) or error.
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
		if line.Message, err = readableJSON(b); err != nil {
			return nil, err
		}
	}
	return json.Marshal(&line)
}

// readableJSON rewrites a message's protojson for people and scripts alike: the Unix-ns
// times (recv_time_ns, time_ns, first_ns, last_ns) become RFC 3339 under the key without
// _ns (recv_time, time, first, last); a flow's addresses (src, dst), bytes that protojson
// writes in base64, become text (10.0.0.1, 2001:db8::1); a DTA key and data become hex, as
// the table shows them. The topic's messages themselves are not changed (docs/kafka.md).
func readableJSON(b []byte) (json.RawMessage, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	readable(v, "")
	return json.Marshal(v)
}

// readable rewrites v in place (readableJSON); parent is the key v is under.
func readable(v any, parent string) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			readable(e, parent)
		}
	case map[string]any:
		for k, e := range x {
			s, isString := e.(string)
			switch {
			case isString && (k == "recv_time_ns" || k == "time_ns" || k == "first_ns" || k == "last_ns"):
				if ns, err := strconv.ParseInt(s, 10, 64); err == nil {
					delete(x, k)
					x[strings.TrimSuffix(k, "_ns")] = TimeText(ns)
				}
			case isString && (k == "src" || k == "dst") && parent == "flow":
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					if a, ok := netip.AddrFromSlice(raw); ok {
						x[k] = a.String()
					}
				}
			case isString && (k == "key" || k == "data") && parent == "dta":
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					x[k] = hex.EncodeToString(raw)
				}
			default:
				readable(e, k)
			}
		}
	}
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
