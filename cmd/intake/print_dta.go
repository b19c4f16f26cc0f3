package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/intake-int/intake/internal/dta"
)

// writeDTA writes the JSON answer body of a query of primitive prim (kw, ki, postcard,
// list) as lines for people, the form `intake query ... --table` prints.
func writeDTA(w io.Writer, prim string, body []byte) error {
	switch prim {
	case "kw":
		var a dta.KWAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return err
		}
		v := strings.ReplaceAll(a.Status, "_", " ")
		if a.Status == "found" {
			v += " " + a.Value
		}
		_, err := fmt.Fprintf(w, "%s key %s: %s (%d votes, %d candidates, threshold %d)\n", a.Store, a.Key, v, a.Votes, a.Candidates, a.Threshold)
		if len(a.Path) > 0 && err == nil {
			_, err = fmt.Fprintf(w, "path %s\n", pathText(a.Path))
		}
		return err
	case "ki":
		var a dta.KIAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "key %s: count %d (epoch %d)\n", a.Key, a.Count, a.Epoch)
		return err
	case "postcard":
		var a dta.PCAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return err
		}
		hops := make([]string, len(a.Hops))
		for i, h := range a.Hops {
			hops[i] = "-"
			if h != nil {
				hops[i] = strconv.FormatUint(uint64(*h), 10)
			}
		}
		_, err := fmt.Fprintf(w, "key %s: %s, hops %s (%d valid chunks)\n", a.Key, strings.ReplaceAll(a.Status, "_", " "), strings.Join(hops, " > "), a.ValidChunks)
		return err
	case "list":
		var a dta.ListAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return err
		}
		for _, e := range a.Entries {
			fmt.Fprintln(w, e)
		}
		_, err := fmt.Fprintf(w, "list %d: %d entries, next cursor %d, head %d, overwritten %d\n", a.List, len(a.Entries), a.NextCursor, a.Head, a.Overwritten)
		return err
	}
	return fmt.Errorf("no primitive %q", prim)
}
