package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// serviceErrorPackages are the packages whose sentinel errors reach the
// handlers, by import name and directory. A new service package (group,
// ...) is one more line.
var serviceErrorPackages = map[string]string{
	"auth":        "../auth",
	"controller":  "../controller",
	"coordinator": "../coordinator",
	"group":       "../group",
	"dynconfig":   "../dynconfig",
	"meta":        "../meta",
	"replica":     "../replica",
	"quota":       "../quota",
	"record":      "../record",
	"scram":       "../scram",
	"storage":     "../storage",
	"txn":         "../txn",
	"wire":        "../wire",
}

// sentinelsNoHandlerSees are exported errors that stay inside their
// package's machinery, with the reason no request can meet them.
var sentinelsNoHandlerSees = map[string]string{
	"meta.ErrCompacted":      "a watch that fell behind etcd's compaction: the store reloads its snapshot, no request waits on it",
	"auth.ErrPasswordDecode": "decoding stored passwords happens when the broker applies its configs, never in a request",
	"meta.ErrConfigsChanged": "a config change lost its compare-and-set: dynconfig.Alter starts over, and after its last attempt returns meta.ErrConflict",
}

// Every exported Err* sentinel of a service package has a row in
// errorTable (or a reason above): a sentinel without one would reach
// clients as UNKNOWN_SERVER_ERROR.
func TestEveryServiceSentinelHasAnErrorCode(t *testing.T) {
	inTable := errorTableEntries(t)
	var declared []string
	for pkg, dir := range serviceErrorPackages {
		for _, name := range exportedSentinels(t, dir) {
			declared = append(declared, pkg+"."+name)
		}
	}
	sort.Strings(declared)
	if len(declared) < 20 {
		t.Fatalf("found only %d sentinels (%v): the test no longer reads the packages", len(declared), declared)
	}
	for _, name := range declared {
		_, mapped := inTable[name]
		_, exempt := sentinelsNoHandlerSees[name]
		switch {
		case !mapped && !exempt:
			t.Errorf("%s has no row in errorTable: clients would see UNKNOWN_SERVER_ERROR", name)
		case mapped && exempt:
			t.Errorf("%s is both in errorTable and listed as never reaching a handler", name)
		}
		delete(sentinelsNoHandlerSees, name)
	}
	for name := range sentinelsNoHandlerSees {
		t.Errorf("%s is listed as never reaching a handler but no service package declares it", name)
	}
}

// exportedSentinels lists the package-level vars named Err* in dir's
// non-test files.
func exportedSentinels(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		// A package renamed or moved must not silently leave the check.
		t.Fatalf("no Go files in %s: update serviceErrorPackages", dir)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

// errorTableEntries lists the pkg.Name errors errorTable maps, as written
// in errors.go.
func errorTableEntries(t *testing.T) map[string]bool {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "errorTable" {
			return true
		}
		for _, row := range vs.Values[0].(*ast.CompositeLit).Elts {
			sel, ok := row.(*ast.CompositeLit).Elts[0].(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if pkg, ok := sel.X.(*ast.Ident); ok {
				out[pkg.Name+"."+sel.Sel.Name] = true
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatal("errorTable not found in errors.go")
	}
	return out
}
