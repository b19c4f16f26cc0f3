package fabric

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/label"
)

// The control channel end to end: the collector's sender (label.HTTPControl) sets shifts on
// a running fabric's control endpoint over loopback HTTP; the endpoint answers the protocol
// of docs/fabric.md, errors included.
func TestControlEndpoint(t *testing.T) {
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	f := testbed(t, AlgoA, nil)
	ep := Endpoints{Label: sink.LocalAddr().String(), Control: "127.0.0.1:0"}
	if err := f.Listen(ep); err != nil {
		t.Fatal(err)
	}
	base := "http://" + f.ControlAddr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, ep) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	hc := label.NewHTTPControl(base, label.ControlDeps{})
	hc.SetShift(3, 1, 2)  // tor3 port 1
	hc.SetShift(9, 2, 1)  // spine1 port 2
	hc.SetShift(3, 1, 0)  // back to 0: not listed
	hc.SetShift(5, 9, 1)  // leaf1 has 4 ports: 404
	hc.SetShift(12, 2, 3) // spine4 port 2 (a spine has 2 ports)
	hc.Close()
	if s, e, d := hc.Sent.Load(), hc.Errors.Load(), hc.Dropped.Load(); s != 4 || e != 1 || d != 0 {
		t.Fatalf("sent %d, errors %d, drops %d", s, e, d)
	}
	get := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", label.ControlPath, "")
	want := `{
  "shifts": [
    {
      "switch_id": 9,
      "port": 2,
      "shift": 1
    },
    {
      "switch_id": 12,
      "port": 2,
      "shift": 3
    }
  ]
}
`
	if code != 200 || body != want {
		t.Fatalf("GET shifts: %d %s", code, body)
	}
	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"switch_id": 5, "port": 9, "shift": 1}`, 404, `{"error": "no switch 5 port 9"}`},
		{`{"switch_id": 5, "port": 1, "shift": 17}`, 400, `{"error": "shift 17: must be at most 16"}`},
		{`{"switch_id": 5, "port": 1, "shift": 1, "x": 0}`, 400, `{"error": "body: json: unknown field \"x\""}`},
		{`{"switch_id": 5, "port": 1, "shift": 4}`, 200, `{"switch_id": 5, "port": 1, "shift": 4}`},
	} {
		code, body := get("POST", label.ControlPath, c.body)
		var got, want bytes.Buffer
		json.Compact(&got, []byte(body))
		json.Compact(&want, []byte(c.want))
		if code != c.code || got.String() != want.String() {
			t.Errorf("POST %s: %d %s, want %d %s", c.body, code, body, c.code, c.want)
		}
	}
	if code, body := get("GET", "/v1/stats", ""); code != 200 || !strings.Contains(body, `"packet_hops"`) {
		t.Errorf("GET /v1/stats: %d %s", code, body)
	}
	if code, body := get("GET", "/v1/topology", ""); code != 200 || !strings.Contains(body, `"name": "spine4"`) || !strings.Contains(body, `"shift": 4`) {
		t.Errorf("GET /v1/topology: %d %s", code, body)
	}
	if code, body := get("DELETE", label.ControlPath, ""); code != 404 && code != 405 {
		t.Errorf("DELETE: %d %s", code, body)
	}
}
