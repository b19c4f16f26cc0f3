package collector

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
)

// TestGroupConfigErrors: a processor whose API address the others cannot reach, and a
// collector both in a group and in a static cluster, are refused with what to set.
func TestGroupConfigErrors(t *testing.T) {
	base := func() config.Config {
		c := config.Default()
		c.Group.Role, c.Group.Brokers = "processor", []string{"127.0.0.1:9092"}
		return c
	}
	c := base()
	c.HTTP.Address = "0.0.0.0:8040"
	if _, err := New(c, Options{}); err == nil || !strings.Contains(err.Error(), `group.advertise: "": http.address "0.0.0.0:8040" names no host the other members can reach: set group.advertise`) {
		t.Errorf("wildcard http.address: %v", err)
	}
	c = base()
	c.Group.Brokers = nil
	if _, err := New(c, Options{}); err == nil || !strings.Contains(err.Error(), "group.brokers: []: group.role processor needs brokers (here, or export.kafka.brokers)") {
		t.Errorf("no brokers: %v", err)
	}
	c = base()
	c.Cluster.Self = "a"
	c.Cluster.Members = []cluster.Member{{Name: "a", API: "127.0.0.1:8040"}}
	if _, err := New(c, Options{}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("group and cluster: %v", err)
	}
}
