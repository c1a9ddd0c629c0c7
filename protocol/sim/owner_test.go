package sim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestSimulationRunsTheOwnersDecision fails when the simulation decides
// for itself what the daemon's owner decides: it must call
// protocol.OwnerFacts.Gate (may an operation be driven),
// protocol.Maintenance (the ordered repair records) and
// protocol.OwnerRetry.After (what a run's end means and when to retry), and
// no method of its process (a simulated worker or apply) may read the
// inputs of those decisions itself (the fold's Retractions and Repairs, a
// grace or pin hold out of an error, Permanent), as its former copies did.
// The world's checks (settled, check) may: they are the oracle.
func TestSimulationRunsTheOwnersDecision(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	called := map[string]bool{}
	forbidden := map[string]bool{"Retractions": true, "Repairs": true, "GraceOf": true, "PinHeldOf": true, "Permanent": true}
	fset := token.NewFileSet()
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ofProcess := fn.Recv != nil && len(fn.Recv.List) == 1 && types(fn.Recv.List[0].Type) == "process"
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				called[sel.Sel.Name] = true
				if ofProcess && forbidden[sel.Sel.Name] {
					t.Errorf("%s: process.%s calls %s itself: the owner's decision is protocol.Maintenance and protocol.OwnerRetry.After, which the daemon runs", fset.Position(call.Pos()), fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	for _, want := range []string{"Maintenance", "After", "Gate"} {
		if !called[want] {
			t.Errorf("protocol/sim never calls %s: the simulation must run the daemon's owner decision", want)
		}
	}
}

// types names a receiver's type (process for *process).
func types(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
