// Command kfakebroker runs a Kafka-protocol cluster (franz-go's kfake, in memory) as a
// process of its own, for the Kafka sink's tests and benchmarks: no Kafka package exists on
// these machines. It listens on loopback, prints "brokers ADDR,ADDR,..." on stdout once
// every broker listens, and then reads commands on stdin, one a line, answering "ok" or
// "error: ...":
//
//	kill N     kills broker N: from now on every request to it is refused (its connection
//	           closed); once it has refused one, or after a second, its listener closes
//	           and the partitions it led get new leaders. (Removing it at once would
//	           close its connections before a client's next request, and a fast client
//	           would move to the new leaders without ever meeting the dead broker.)
//	refused    prints "refused K": the requests the killed brokers refused (closing the
//	           connection)
//	leader T P prints "leader N": the broker that leads partition P of topic T (-1: none)
//	leaders    moves every partition's leadership at random
//	refuse create
//	           refuses every CreateTopics request from now on (TOPIC_AUTHORIZATION_FAILED),
//	           as a cluster that does not let clients create topics
//
// It exits when stdin closes or at SIGTERM.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	brokers := flag.Int("brokers", 3, "number of brokers")
	partitions := flag.Int("partitions", 4, "partitions of each seeded topic")
	topics := flag.String("topics", "intake.reports,intake.events,intake.snapshots,intake.flows", "topics to create, comma-separated (empty: none)")
	flag.Parse()
	ports := make([]int, *brokers) // 0: any free port
	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.Ports(ports...), kfake.DefaultNumPartitions(*partitions)}
	if *topics != "" {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Printf("brokers %s\n", strings.Join(c.ListenAddrs(), ","))
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		c.Close()
		os.Exit(0)
	}()
	var dead sync.Map // node id → true
	var refused atomic.Int64
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		if _, ok := dead.Load(c.CurrentNode()); !ok {
			return nil, nil, false
		}
		c.KeepControl()
		refused.Add(1)
		return nil, errors.New("broker killed"), true
	})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 2 && f[0] == "kill":
			n, err := strconv.Atoi(f[1])
			if err == nil && (n < 0 || n >= *brokers) {
				err = fmt.Errorf("no broker %d (0-%d)", n, *brokers-1)
			}
			if err == nil {
				dead.Store(int32(n), true)
				before := refused.Load()
				go func() {
					for end := time.Now().Add(time.Second); refused.Load() == before && time.Now().Before(end); {
						time.Sleep(time.Millisecond)
					}
					if err := c.RemoveNode(int32(n)); err != nil {
						fmt.Fprintln(os.Stderr, "kfakebroker: kill:", err)
					}
				}()
			}
			reply(err)
		case len(f) == 3 && f[0] == "leader":
			p, err := strconv.Atoi(f[2])
			if err != nil {
				reply(err)
				continue
			}
			fmt.Printf("leader %d\n", c.LeaderFor(f[1], int32(p)))
		case len(f) == 1 && f[0] == "refused":
			fmt.Printf("refused %d\n", refused.Load())
		case len(f) == 1 && f[0] == "leaders":
			c.ShufflePartitionLeaders()
			reply(nil)
		case len(f) == 2 && f[0] == "refuse" && f[1] == "create":
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Err: kerr.TopicAuthorizationFailed, Count: -1})
			reply(nil)
		default:
			reply(fmt.Errorf("unknown command %q", in.Text()))
		}
	}
}

func reply(err error) {
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("ok")
}
