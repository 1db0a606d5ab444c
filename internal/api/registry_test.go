package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every API whose handler checks its CLUSTER row declared one when it was
// registered: an API that asks without a row would panic on its first
// request.
func TestClusterACLCheckedOnlyWhereDeclared(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range pkgs["api"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || fn.Sel.Name != "clusterAllowed" || len(call.Args) != 2 {
				return true
			}
			key, ok := call.Args[1].(*ast.SelectorExpr)
			if !ok {
				return true // the definition's own parameter
			}
			checked++
			var k kmsg.Key = -1
			for i := range kmsg.Key(100) {
				if i.Name() == key.Sel.Name {
					k = i
				}
			}
			if d, ok := registry[int16(k)]; !ok || !d.hasClusterOp {
				t.Errorf("clusterAllowed(%s) but %s is registered without clusterACL", key.Sel.Name, key.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("found no clusterAllowed call: the test no longer sees the handlers")
	}
}

// The data path never waits for the store: only admin APIs catch up.
func TestDataPathAPIsDoNotCatchUp(t *testing.T) {
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.InitProducerID, kmsg.ApiVersions} {
		if registry[int16(k)].catchUp != nil {
			t.Errorf("%s catches up with the store before every request", k.Name())
		}
	}
	if registry[int16(kmsg.CreateTopics)].catchUp == nil {
		t.Error("CreateTopics does not catch up: a topic just created through another broker would be unknown")
	}
}
