package main

import (
	"fmt"
	"io"

	"github.com/intake-int/intake/internal/dta"
)

// intake dta reset: remove a data directory's stores on purpose (a writer refuses an empty
// or wrongly sized store rather than re-creating it: docs/dta.md, "Data directory and store
// files"). The logic, checks and lock are dta.ResetStores'.

func init() {
	registerSub("dta", verb{name: "reset", summary: "remove a data directory's DTA stores, so that the next start creates them empty", run: runDTAReset})
}

func runDTAReset(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dta reset", "--data-dir DIR | --config FILE", stdout)
	dir := fs.String("data-dir", "", "the data `directory` to reset (dta.data_dir)")
	cfgPath := fs.String("config", "", "reset the dta.data_dir of this configuration `file`")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	switch {
	case *dir != "" && *cfgPath != "":
		return usageErr("--data-dir and --config exclude each other")
	case *dir == "" && *cfgPath == "":
		return usageErr("--data-dir DIR or --config FILE is required (the default data directory is %s)", dta.DefaultDataDir)
	case *cfgPath != "":
		cfg, err := loadConfig(*cfgPath)
		if err != nil {
			return err
		}
		*dir = cfg.DTA.DataDir
	}
	removed, err := dta.ResetStores(*dir)
	for _, p := range removed {
		fmt.Fprintf(stdout, "removed %s\n", p)
	}
	if err == nil && len(removed) == 0 {
		fmt.Fprintf(stdout, "no stores in %s\n", *dir)
	}
	return err
}
