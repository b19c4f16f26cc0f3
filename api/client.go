package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"
)

// Get is the client side of the API, for the CLI's query verbs: it reads path?q from the
// collector at addr (HOST:PORT, or a URL) and returns the body, or an error naming the status
// and the API's JSON error message. A collector that does not answer gets a hint that it may
// not be running.
func Get(addr, path string, q url.Values) ([]byte, error) {
	u := addr
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	u = strings.TrimSuffix(u, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		return nil, fmt.Errorf("%w (is 'intake serve' running with http.address %s?)", err, addr)
	}
	return result(resp)
}

// Serve answers GET path?q with r's handlers in process, as Get would over HTTP: `intake
// query --store` answers exactly what a collector's API answers.
func Serve(r Registrar, path string, q url.Values) ([]byte, error) {
	s := New("", nil)
	r.RegisterAPI(s)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path+"?"+q.Encode(), nil))
	return result(rec.Result())
}

// result reads a response's body, or the error it carries.
func result(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s: %s", resp.Status, e.Error)
		}
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}
