package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/metrics"
)

const testToken = "s3cret-token-0123456789"

// guarded starts a server of cfg with a read endpoint and a write endpoint that decodes its
// body strictly.
func guarded(t *testing.T, cfg api.Config) *api.Server {
	t.Helper()
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	s, err := api.NewFromConfig(cfg, api.Deps{Metrics: metrics.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	s.HandleFunc("GET /api/v1/thing", func(w http.ResponseWriter, r *http.Request) {
		api.JSON(w, 200, map[string]string{"thing": "ok"})
	})
	s.HandleFunc("PUT /api/v1/thing", func(w http.ResponseWriter, r *http.Request) {
		var v map[string]int
		if api.DecodeBody(w, r, &v, "{name: number}") {
			api.JSON(w, 200, v)
		}
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

// call makes one request with the Host header, the token (when not empty) and the body
// given, and returns the status and body.
func call(t *testing.T, c *http.Client, method, url, host, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostCheck: a Host header naming anything but this server is refused (a page on a
// rebound name must not reach the API); before, any Host was served.
func TestHostCheck(t *testing.T) {
	s := guarded(t, api.Config{AllowedHosts: []string{"intake.example.net"}})
	_, port, _ := net.SplitHostPort(s.Addr())
	url := "http://" + s.Addr() + "/api/v1/thing"
	for _, tc := range []struct {
		host string
		code int
	}{
		{"", 200}, // the address dialled
		{"localhost:" + port, 200},
		{"LOCALHOST", 200},
		{"127.0.0.1", 200},
		{"127.0.0.2:" + port, 200}, // loopback
		{"[::1]:" + port, 200},
		{"intake.example.net:" + port, 200},
		{"intake.example.net.", 200},
		{"evil.example:" + port, 421},
		{"localhost.evil.example", 421},
		{"10.1.2.3", 421}, // an address this server is not reached at
		{"intake.example.net.evil", 421},
	} {
		code, body := call(t, http.DefaultClient, "GET", url, tc.host, "", "")
		if code != tc.code {
			t.Errorf("Host %q: %d %s, want %d", tc.host, code, body, tc.code)
		}
		want, _ := json.Marshal(fmt.Sprintf("Host %q does not name this server (a loopback or local address, localhost, or a name in http.allowed_hosts)", tc.host))
		if code == 421 && body != "{\n  \"error\": "+string(want)+"\n}\n" {
			t.Errorf("Host %q: %s", tc.host, body)
		}
	}
	// Writes too; /healthz is for probes and passes.
	if code, _ := call(t, http.DefaultClient, "PUT", url, "evil.example", "", `{"a": 1}`); code != 421 {
		t.Errorf("PUT with a foreign Host: %d", code)
	}
	if code, _ := call(t, http.DefaultClient, "GET", "http://"+s.Addr()+"/healthz", "evil.example", "", ""); code != 200 {
		t.Errorf("/healthz with a foreign Host: %d", code)
	}
	if got := s.Refused()["host"]; got != 5 {
		t.Errorf("refused for host: %d, want 5", got)
	}
}

// TestToken: with http.token set, every request but /healthz needs it; with token_reads
// off, only writes do. Before, anyone who reached the port could PUT.
func TestToken(t *testing.T) {
	s := guarded(t, api.Config{Token: testToken, TokenReads: true})
	url := "http://" + s.Addr() + "/api/v1/thing"
	const unauth = "{\n  \"error\": \"a bearer token is required: Authorization: Bearer TOKEN (http.token)\"\n}\n"
	for _, tc := range []struct {
		method, token string
		code          int
	}{
		{"GET", "", 401}, {"PUT", "", 401}, {"GET", "wrong-token-0123456789", 401}, {"PUT", testToken + "x", 401},
		{"GET", testToken, 200}, {"PUT", testToken, 200},
	} {
		code, body := call(t, http.DefaultClient, tc.method, url, "", tc.token, `{"a": 1}`)
		if code != tc.code || (code == 401 && body != unauth) {
			t.Errorf("%s token %q: %d %s, want %d", tc.method, tc.token, code, body, tc.code)
		}
	}
	req, _ := http.NewRequest("GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("WWW-Authenticate"); h != `Bearer realm="intake"` {
		t.Errorf("WWW-Authenticate %q", h)
	}
	if code, _ := call(t, http.DefaultClient, "GET", "http://"+s.Addr()+"/healthz", "", "", ""); code != 200 {
		t.Errorf("/healthz without token: %d", code)
	}
	if code, _ := call(t, http.DefaultClient, "GET", "http://"+s.Addr()+"/metrics", "", "", ""); code != 401 {
		t.Errorf("/metrics without token: %d", code)
	}

	// From a file, reads open.
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte(testToken+"\n"), 0o600)
	s = guarded(t, api.Config{TokenFile: p, TokenReads: false})
	url = "http://" + s.Addr() + "/api/v1/thing"
	if code, _ := call(t, http.DefaultClient, "GET", url, "", "", ""); code != 200 {
		t.Errorf("token_reads off, GET without token: %d", code)
	}
	if code, _ := call(t, http.DefaultClient, "PUT", url, "", "", `{"a": 1}`); code != 401 {
		t.Errorf("token_reads off, PUT without token: %d", code)
	}
	if code, _ := call(t, http.DefaultClient, "PUT", url, "", testToken, `{"a": 1}`); code != 200 {
		t.Errorf("token_reads off, PUT with token: %d", code)
	}
}

// TestBodyLimits: a body over MaxBody is refused with 413, declared or not; a body with
// garbage after its JSON value is a 400.
func TestBodyLimits(t *testing.T) {
	s := guarded(t, api.Config{})
	url := "http://" + s.Addr() + "/api/v1/thing"
	big := `{"a": 1` + strings.Repeat(" ", api.MaxBody) + `}`
	const tooLarge = "{\n  \"error\": \"body larger than 65536 bytes\"\n}\n"
	if code, body := call(t, http.DefaultClient, "PUT", url, "", "", big); code != 413 || body != tooLarge {
		t.Errorf("large body: %d %s", code, body)
	}
	// Chunked: no Content-Length, the reader stops at the limit.
	req, _ := http.NewRequest("PUT", url, io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || string(b) != tooLarge {
		t.Errorf("large chunked body: %d %s", resp.StatusCode, b)
	}
	for body, want := range map[string]string{
		`{"a": 1} garbage`: "body: must be {name: number}: data after the JSON value",
		`{"a": 1}{"b": 2}`: "body: must be {name: number}: data after the JSON value",
		`{"a": 1`:          "body: must be {name: number}: unexpected EOF",
		``:                 "body: must be {name: number}: empty",
	} {
		if code, got := call(t, http.DefaultClient, "PUT", url, "", "", body); code != 400 || got != "{\n  \"error\": \""+want+"\"\n}\n" {
			t.Errorf("body %q: %d %s, want 400 %s", body, code, got, want)
		}
	}
	if code, got := call(t, http.DefaultClient, "PUT", url, "", "", "{\"a\": 1}\n\t "); code != 200 || got != "{\n  \"a\": 1\n}\n" {
		t.Errorf("trailing white space: %d %s", code, got)
	}
	if r := s.Refused()["body"]; r != 2 {
		t.Errorf("refused for body: %d, want 2", r)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns their paths.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "intake test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(k)
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600)
	return cert, key
}

// TestTLS: with http.tls the server speaks HTTPS only; the commands' client trusts the
// certificate of INTAKE_CA and sends INTAKE_TOKEN.
func TestTLS(t *testing.T) {
	cert, key := selfSigned(t)
	s := guarded(t, api.Config{TLS: api.TLSConfig{Cert: cert, Key: key}, Token: testToken, TokenReads: true})
	if !s.TLS() || !s.Guarded() {
		t.Errorf("TLS %v, guarded %v", s.TLS(), s.Guarded())
	}
	if _, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		// The TLS listener answers a plain request with a 400 of its own, not the API.
		resp, _ := http.Get("http://" + s.Addr() + "/api/v1/thing")
		if resp != nil && resp.StatusCode == 200 {
			t.Error("plain HTTP served the API")
		}
	}
	t.Setenv(api.EnvCA, cert)
	t.Setenv(api.EnvToken, testToken)
	c, err := api.NewClient("https://"+s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.Get("/api/v1/thing", nil); err != nil || string(b) != "{\n  \"thing\": \"ok\"\n}\n" {
		t.Errorf("GET over TLS: %q %v", b, err)
	}
	t.Setenv(api.EnvToken, "")
	c, _ = api.NewClient("https://"+s.Addr(), 5*time.Second)
	if _, err := c.Get("/api/v1/thing", nil); err == nil || err.Error() != "401 Unauthorized: a bearer token is required: Authorization: Bearer TOKEN (http.token) (set INTAKE_TOKEN or INTAKE_TOKEN_FILE)" {
		t.Errorf("GET without token: %v", err)
	}
	// Without the CA the certificate is not trusted.
	t.Setenv(api.EnvCA, "")
	c, _ = api.NewClient("https://"+s.Addr(), 5*time.Second)
	if _, err := c.Get("/api/v1/thing", nil); err == nil || !api.IsConnError(err) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET with the system's roots: %v", err)
	}
}

// TestStopEndsLongRequests: Stop ends the requests' context, so a streaming handler returns
// at once; a handler that ignores it is cut off after the grace period. Before, Stop waited
// for them until its context's deadline and then failed.
func TestStopEndsLongRequests(t *testing.T) {
	s := api.New("127.0.0.1:0", nil)
	started := make(chan struct{}, 2)
	s.HandleFunc("GET /api/v1/wait", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-r.Context().Done()
	})
	s.HandleFunc("GET /api/v1/stuck", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		started <- struct{}{}
		time.Sleep(3 * time.Second)
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v1/wait", "/api/v1/stuck"} {
		go func() {
			if resp, err := http.Get("http://" + s.Addr() + p); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		<-started
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stop took %s", d)
	}
}

// TestConfigValidate: the http section's errors.
func TestConfigValidate(t *testing.T) {
	cert, key := selfSigned(t)
	tokFile := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tokFile, []byte("short\n"), 0o600)
	for _, tc := range []struct {
		cfg  api.Config
		want string
	}{
		{api.Config{Address: "8040"}, "address: 8040: must be host:port, e.g. 127.0.0.1:8040"},
		{api.Config{Token: "short"}, "token: must be at least 16 characters"},
		{api.Config{Token: "sixteen chars ok"}, "token: must be printable ASCII without spaces"},
		{api.Config{Token: testToken, TokenFile: tokFile}, "token_file: " + tokFile + ": not with token (one or the other)"},
		{api.Config{TokenFile: tokFile}, "token_file: " + tokFile + ": must be at least 16 characters"},
		{api.Config{TokenFile: "/nonexistent/tok"}, "token_file: /nonexistent/tok: open /nonexistent/tok: no such file or directory"},
		{api.Config{AllowedHosts: []string{"host:80"}}, `allowed_hosts[0]: "host:80": must be a host name or address without a port`},
		{api.Config{TLS: api.TLSConfig{Cert: cert}}, "tls: cert and key must be given together"},
		{api.Config{TLS: api.TLSConfig{Cert: key, Key: key}}, "tls.cert: " + key + ": tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched"},
		{api.Config{Token: testToken, TLS: api.TLSConfig{Cert: cert, Key: key}}, ""},
	} {
		err := tc.cfg.Validate()
		if got := fmt.Sprint(err); (err == nil && tc.want != "") || (err != nil && got != tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	c := api.DefaultConfig()
	if c.Address != "127.0.0.1:8040" || !c.TokenReads || c.Token != "" {
		t.Errorf("defaults %+v", c)
	}
	// The first line of a token file is the token.
	os.WriteFile(tokFile, []byte(testToken+"\r\nmore\n"), 0o600)
	if tok, err := api.ReadTokenFile(tokFile); err != nil || tok != testToken {
		t.Errorf("token file: %q %v", tok, err)
	}
}

// TestPages: the console's static pages (HandlePages) need no token, as they hold no data,
// but still pass the Host check; every API path, /metrics and every write keep the token.
func TestPages(t *testing.T) {
	cfg := api.Config{Address: "127.0.0.1:0", Token: testToken, TokenReads: true}
	s, err := api.NewFromConfig(cfg, api.Deps{Metrics: metrics.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	s.HandleFunc("GET /api/v1/thing", func(w http.ResponseWriter, r *http.Request) {
		api.JSON(w, 200, map[string]string{"thing": "ok"})
	})
	s.HandlePages(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "page "+r.URL.Path)
	}))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	base := "http://" + s.Addr()
	for _, tc := range []struct {
		method, path, host, token string
		code                      int
		body                      string
	}{
		{"GET", "/", "", "", 200, "page /"},
		{"GET", "/console.js", "", "", 200, "page /console.js"},
		{"HEAD", "/", "", "", 200, ""},
		{"GET", "/", "evil.example", "", 421, ""},
		{"PUT", "/", "", "", 401, ""},
		{"POST", "/console.js", "", testToken, 405, ""},
		{"GET", "/api/v1/thing", "", "", 401, ""},
		{"GET", "/api/v1/thing", "", testToken, 200, "{\n  \"thing\": \"ok\"\n}\n"},
		{"GET", "/api/v1/nothing", "", "", 401, ""},
		{"GET", "/api/v2/x", "", "", 401, ""},
		{"GET", "/api", "", "", 401, ""},
		{"GET", "/metrics", "", "", 401, ""},
		{"GET", "/%6detrics", "", "", 401, ""}, // the decoded path is what counts
		{"GET", "/healthz", "", "", 200, "ok\n"},
	} {
		code, body := call(t, http.DefaultClient, tc.method, base+tc.path, tc.host, tc.token, "")
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("%s %s (Host %q, token %q): %d %q, want %d %q", tc.method, tc.path, tc.host, tc.token, code, body, tc.code, tc.body)
		}
	}
}
