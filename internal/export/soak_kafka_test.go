//go:build soak && linux

package export_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaHigh returns each topic's high watermark summed over its partitions: the messages it
// holds (kfake keeps every one, from offset 0).
func kafkaHigh(t *testing.T, brokers []string, topics ...string) map[string]uint64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(tp)
		meta.Topics = append(meta.Topics, mt)
	}
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	for _, mt := range mresp.Topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = *mt.Topic
		for _, p := range mt.Partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p.Partition, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]uint64{}
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			t.Fatal(sh.Err)
		}
		for _, rt := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("list offsets %s/%d: error %d", rt.Topic, p.Partition, p.ErrorCode)
				}
				out[rt.Topic] += uint64(p.Offset)
			}
		}
	}
	return out
}
