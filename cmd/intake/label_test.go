package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestSimLabelDistJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"sim", "label-dist", "--k", "4", "--ratio", "1", "--algo", "a", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v struct {
		Dist        []float64 `json:"dist"`
		Expectation float64   `json:"expectation"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	// ratio 1: every switch labels, Z_A = H: E = (1·1 + 3·2 + 5·12)/15
	if len(v.Dist) != 6 || v.Expectation < 4.4666 || v.Expectation > 4.4667 {
		t.Fatalf("%s", out.String())
	}
	if code := run([]string{"sim", "label-dist", "--f", "F9"}, &out, &errb); code != 2 {
		t.Fatalf("bad --f: exit %d", code)
	}
}

func TestSimLabelOneFigure(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"sim", "label", "--fig", "fig19", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v struct {
		Figures []struct {
			ID     string `json:"id"`
			Series []struct {
				Y []float64 `json:"y"`
			} `json:"series"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Figures) != 1 || v.Figures[0].ID != "fig19" {
		t.Fatalf("%v %s", err, out.String())
	}
}
