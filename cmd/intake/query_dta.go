package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/dta"
)

// intake query kw|ki|postcard|list: ask a running collector's /api/v1/dta endpoints, or
// open a store directory read-only (--store DIR) and answer from its regions: the second
// process of DTA's architecture, reading what the collector writes without asking it.

func init() {
	for _, s := range []struct{ name, summary string }{
		{"kw", "look a key up in the DTA Key-Write store (or --name paths: INT path traces)"},
		{"ki", "read a key's DTA Key-Increment count"},
		{"postcard", "decode a flow's DTA Postcarding chunk"},
		{"list", "poll a DTA Append list from a cursor"},
	} {
		name := s.name
		registerSub("query", verb{name: name, summary: s.summary, run: func(args []string, stdout, stderr io.Writer) error {
			return runQueryDTA(name, args, stdout, stderr)
		}})
	}
}

func runQueryDTA(prim string, args []string, stdout, stderr io.Writer) error {
	arg := "KEY"
	if prim == "list" {
		arg = "LIST_ID"
	}
	fs := newFlags("query "+prim, "[--api HOST:PORT | --store DIR] [--json|--table] [flags] "+arg, stdout)
	o := cli.AddQuery(fs, true, stderr)
	store := fs.String("store", "", "open the DTA store `directory` read-only instead of asking a collector (dta.data_dir, or an epochs/<time> snapshot)")
	keyLen := fs.Int("key-len", 4, "`bytes` a numeric key is widened to (the decoder's dta.key_len)")
	var t *int
	var name *string
	var cursor *uint64
	var limit *int
	switch prim {
	case "kw":
		t = fs.Int("threshold", 0, "require at least `T` matching slots (0: the store's threshold; the API's t)")
		cli.Alias(fs, "t", "threshold", stderr)
		name = fs.String("name", "kw", "the Key-Write `store`: kw (DTA reports) or paths (INT path traces)")
	case "list":
		cursor = fs.Uint64("cursor", 0, "the `position` to poll from (next_cursor of the previous poll)")
		limit = fs.Int("limit", 1000, "at most `n` entries")
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	asJSON, err := o.WantJSON()
	if err != nil {
		return usageErr("%v", err)
	}
	if len(pos) != 1 {
		return usageErr("one %s is required", arg)
	}
	// The API's limits, checked here too so that --store answers the same.
	switch {
	case t != nil && (*t < 0 || *t > 8):
		return usageErr("--threshold %d: allowed is 0 (the store's threshold) to 8", *t)
	case name != nil && *name != "kw" && *name != "paths":
		return usageErr("--name %q: kw or paths", *name)
	case limit != nil && (*limit < 1 || *limit > 100000):
		return usageErr("--limit %d: allowed is 1 to 100000", *limit)
	}
	u := "/api/v1/dta/" + prim + "/" + url.PathEscape(pos[0])
	q := url.Values{}
	if t != nil && *t > 0 {
		q.Set("t", strconv.Itoa(*t))
	}
	if name != nil && *name != "kw" {
		q.Set("store", *name)
	}
	if cursor != nil {
		q.Set("cursor", strconv.FormatUint(*cursor, 10))
		q.Set("limit", strconv.Itoa(*limit))
	}
	var body []byte
	if *store == "" {
		body, err = apiGet(o.API, u, q)
	} else {
		// The store directory answers through the same handlers, in process.
		st, oerr := dta.OpenStoresReadOnly(*store)
		if oerr != nil {
			return oerr
		}
		defer st.Close()
		body, err = badRequest(api.Serve(dta.NewAPI(st, *keyLen), u, q))
	}
	switch {
	case err != nil:
		return err
	case !asJSON:
		return writeDTA(stdout, prim, body)
	}
	_, err = stdout.Write(body)
	return err
}

// apiGet reads the JSON body of GET addr+path?q, or returns the API's error (the request
// as the other query verbs make it).
func apiGet(addr, path string, q url.Values) ([]byte, error) {
	body, err := getAPI(addr, path, q)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return nil, fmt.Errorf("%w; --store DIR reads a store directory without a collector", err)
	}
	return body, err
}
