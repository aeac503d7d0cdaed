// Package leaf_test checks that the packages of internal/leaf, and package
// clock, are leaves: they import the standard library only
// (docs/architecture.md §2).
package leaf_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLeavesImportOnlyTheStandardLibrary(t *testing.T) {
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, filepath.Join("..", "..", "clock"))
	checked := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue // tests may use what they like
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				// Paths of the standard library have no dot in their first
				// element.
				if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
					t.Errorf("%s imports %s: a leaf imports the standard library only", f, path)
				}
			}
			checked++
		}
	}
	if checked < 4 {
		t.Fatalf("checked %d files: the leaves were not found", checked)
	}
}
