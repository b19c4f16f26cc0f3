package api

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/smallfile"
)

// The environment of the commands that query a running collector (intake status, intake
// query ...): docs/security.md.
const (
	// EnvToken is the bearer token to send (http.token of the collector).
	EnvToken = "INTAKE_TOKEN"
	// EnvTokenFile names a file holding it (read as http.token_file is), instead.
	EnvTokenFile = "INTAKE_TOKEN_FILE"
	// EnvCA names a PEM file of the CA certificates an https:// collector's certificate
	// must chain to (a self-signed certificate is its own CA); unset: the system's roots.
	EnvCA = "INTAKE_CA"
)

// Client is a command's connection to a collector's API: the address (host:port, or a URL
// with http:// or https://), the token and the CAs from the environment.
type Client struct {
	Base  string // scheme://host:port
	addr  string // as given, for messages
	token string
	http  *http.Client
}

// NewClient returns a client of the collector at addr, configured from the environment.
func NewClient(addr string, timeout time.Duration) (*Client, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	c := &Client{Base: strings.TrimSuffix(base, "/"), addr: addr, http: &http.Client{Timeout: timeout}}
	c.token = os.Getenv(EnvToken)
	if f := os.Getenv(EnvTokenFile); f != "" {
		tok, err := ReadTokenFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", EnvTokenFile, f, err)
		}
		c.token = tok
	}
	if f := os.Getenv(EnvCA); f != "" {
		pem, err := smallfile.Read(f, smallfile.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %s: no PEM certificate", EnvCA, f)
		}
		c.http.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return c, nil
}

// Get reads path?q into its body. A status other than 200 is an error naming the status
// and the collector's JSON error message; a failed connection is an error that suggests
// why.
func (c *Client) Get(path string, q url.Values) ([]byte, error) {
	u := c.Base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w (is 'intake serve' running with http.address %s?)", err, c.addr)
	}
	body, err := result(resp)
	if se := (*StatusError)(nil); errors.As(err, &se) && se.Code == http.StatusUnauthorized && c.token == "" {
		se.Msg += " (set " + EnvToken + " or " + EnvTokenFile + ")"
	}
	return body, err
}

// Serve answers GET path?q with r's handlers in process, as Client.Get would over HTTP:
// `intake query --store` answers exactly what a collector's API answers.
func Serve(r Registrar, path string, q url.Values) ([]byte, error) {
	s := New("", nil)
	r.RegisterAPI(s)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path+"?"+q.Encode(), nil)
	req.Host = "localhost" // in process: the guards' Host check passes as for a local client
	s.Handler().ServeHTTP(rec, req)
	return result(rec.Result())
}

// result reads a response's body, or the StatusError it carries.
func result(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorBody
		msg := string(bytes.TrimSpace(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return nil, &StatusError{Status: resp.Status, Code: resp.StatusCode, Msg: msg}
	}
	return body, nil
}

// StatusError is an answer other than 200.
type StatusError struct {
	Status string // "404 Not Found"
	Code   int
	Msg    string
}

func (e *StatusError) Error() string { return e.Status + ": " + e.Msg }

// IsConnError reports whether err is a failure to reach the collector (not an answer).
func IsConnError(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}
