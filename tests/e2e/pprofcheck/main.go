// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// pprofcheck reads pprof profiles as the backends that ingest them do:
// google/pprof's Parse and CheckValid, the rule Parca's normalizer
// applies (every mapping, function and location id is its index plus
// one), and Pyroscope's (every string valid UTF-8). It prints "ok FILE"
// or "bad FILE: WHY" for each, and exits 1 if any is bad.
//
// usage: GOPATH=/usr/share/gocode GO111MODULE=off go run main.go FILE...
package main

import (
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/google/pprof/profile"
)

func parca(p *profile.Profile) error {
	for i, m := range p.Mapping {
		if m.ID != uint64(i+1) {
			return fmt.Errorf("mapping id is not sequential: [%d].id = %d", i, m.ID)
		}
	}
	for i, f := range p.Function {
		if f.ID != uint64(i+1) {
			return fmt.Errorf("function id is not sequential: [%d].id = %d", i, f.ID)
		}
	}
	for i, l := range p.Location {
		if l.ID != uint64(i+1) {
			return fmt.Errorf("location id is not sequential: [%d].id = %d", i, l.ID)
		}
	}
	return nil
}

func pyroscope(p *profile.Profile) error {
	bad := func(what, s string) error {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s %q is not valid UTF-8", what, s)
		}
		return nil
	}
	for _, m := range p.Mapping {
		if err := bad("mapping file", m.File); err != nil {
			return err
		}
	}
	for _, f := range p.Function {
		for _, s := range []string{f.Name, f.SystemName, f.Filename} {
			if err := bad("function", s); err != nil {
				return err
			}
		}
	}
	for _, s := range p.Sample {
		for k, vs := range s.Label {
			for _, v := range append([]string{k}, vs...) {
				if err := bad("label", v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func check(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return err
	}
	if err := p.CheckValid(); err != nil {
		return err
	}
	if err := parca(p); err != nil {
		return err
	}
	return pyroscope(p)
}

func main() {
	failed := false
	for _, path := range os.Args[1:] {
		if err := check(path); err != nil {
			fmt.Printf("bad %s: %v\n", path, err)
			failed = true
		} else {
			fmt.Printf("ok %s\n", path)
		}
	}
	if failed {
		os.Exit(1)
	}
}
