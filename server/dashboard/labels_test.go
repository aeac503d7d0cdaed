package dashboard_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every diagnosis the lease doctor can name (engine/ledger's Diagnosis
// constants) has a label and a colour in the dashboard's script, and the
// script labels no diagnosis the doctor no longer names: a new finding
// kind without one would show its raw name, grey, as if it were harmless.
func TestEveryDiagnosisHasALabel(t *testing.T) {
	t.Parallel()
	kinds := diagnosisConstants(t, "../../engine/ledger")
	if len(kinds) < 10 {
		t.Fatalf("found only %d Diagnosis constants in engine/ledger: %v", len(kinds), kinds)
	}
	labels := scriptDiagnoses(t, "static/app.js")
	for _, k := range kinds {
		if _, ok := labels[k]; !ok {
			t.Errorf("diagnosis %q has no label in static/app.js's DIAGNOSES", k)
		}
	}
	for k := range labels {
		if !slices.Contains(kinds, k) {
			t.Errorf("static/app.js labels %q, which engine/ledger does not name", k)
		}
	}
}

// diagnosisConstants returns the values of the string constants named
// Diagnosis* in the Go files (tests left out) of dir.
func diagnosisConstants(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				kinds = append(kinds, diagnosisValues(spec)...)
			}
			return true
		})
	}
	return kinds
}

// diagnosisValues returns the string values spec gives names Diagnosis*.
func diagnosisValues(spec *ast.ValueSpec) []string {
	var vs []string
	for i, name := range spec.Names {
		if !strings.HasPrefix(name.Name, "Diagnosis") || i >= len(spec.Values) {
			continue
		}
		if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			vs = append(vs, v)
		}
	}
	return vs
}

// scriptDiagnoses returns the labels of the DIAGNOSES table in the script
// at path, by diagnosis.
func scriptDiagnoses(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile(`(?s)const DIAGNOSES = \{(.*?)\n\s*\};`).FindSubmatch(src)
	if table == nil {
		t.Fatalf("no DIAGNOSES table in %s", path)
	}
	labels := map[string]string{}
	for _, m := range regexp.MustCompile(`'([a-z-]+)': \['([^']+)', '(ok|warn|bad|plain)'\]`).FindAllSubmatch(table[1], -1) {
		labels[string(m[1])] = string(m[2])
	}
	if len(labels) == 0 {
		t.Fatalf("no labels read from %s's DIAGNOSES", path)
	}
	return labels
}
