// Package console owns intake's web console: static pages (HTML, CSS and plain JavaScript,
// no build step) embedded in the binary, which the API server serves at / beside the API
// (api.Server.HandlePages). The pages hold no data: everything they show they read from
// the JSON API and the event stream in the browser, sending the bearer token the user gives
// them once, so the API's guards apply to the console's data as to any client's
// (docs/console.md).
//
// It is the "web UI" of docs/design.md's data flow: an overview it opens on (the slowest
// flows, hot switches and links, recent events by kind, health and drops), the fabric drawn
// by hop position from the flows' paths (GET /api/v1/topology), live events, top flows with
// filters, a flow's hops and events, a switch's history and histograms, the last hour's
// charts (GET /api/v1/history), the collector's health, and, in a secondary group, the DTA
// stores and INT-label coverage. Flows are written and read in the CLI's notation.
package console

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/intake-int/intake/api"
)

//go:embed assets
var assets embed.FS

// Register serves the console on s at /. Call it before s starts.
func Register(s *api.Server) { s.HandlePages(Handler()) }

// csp keeps the pages to their own files: no inline script or style, nothing from
// elsewhere, no framing (a page that frames the console could trick a click).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files: index.html at /, the rest by name, 404 otherwise.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The files change with the binary, which has no build date to put in a
		// Last-Modified: have the browser ask each time (a 304 costs nothing).
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
