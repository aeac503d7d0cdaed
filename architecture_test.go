package baton_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of this module, the prefix of Baton's own
// packages.
const module = "github.com/baton-sqs/baton"

// floor says where a package stands in docs/architecture.md §2.
type floor int

const (
	tower  floor = iota // may import only what is listed after it
	ground              // imports the standard library only; anyone may import it
	beside              // tests and examples: may import the tower, not be imported by it
)

// layer is one package of the documented map.
type layer struct {
	floor floor
	rank  int // its line in the map; a tower package imports only higher ranks
}

// TestArchitectureMap holds docs/architecture.md §2 to the code: every
// package of the module is on the map, and each imports only what the map
// allows it. When it fails, change the code or the map, whichever is wrong.
func TestArchitectureMap(t *testing.T) {
	t.Parallel()
	layers := readMap(t, filepath.Join("docs", "architecture.md"))
	pkgs := modulePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk went wrong", len(pkgs))
	}
	for dir, imports := range pkgs {
		me, ok := layers[dir]
		if !ok {
			t.Errorf("package %q is not on the map in docs/architecture.md §2", dir)
			continue
		}
		for _, imp := range imports {
			if msg := allowed(me, layers, imp); msg != "" {
				t.Errorf("%s imports %s: %s (docs/architecture.md §2)", dir, imp, msg)
			}
		}
	}
	for _, imp := range pkgs["."] {
		if imp != "clock" {
			t.Errorf("the root package imports %s: of Baton's packages it imports only clock (docs/architecture.md §2)", imp)
		}
	}
	for dir := range layers {
		if _, ok := pkgs[dir]; !ok {
			t.Errorf("docs/architecture.md §2 lists %q, which is not a package of the module", dir)
		}
	}
}

// allowed says why the package at me may not import imp ("" when it may).
func allowed(me layer, layers map[string]layer, imp string) string {
	them, ok := layers[imp]
	switch {
	case !ok:
		return "the imported package is not on the map"
	case me.floor == ground:
		return "a ground-floor package imports the standard library only"
	case them.floor == ground:
		return ""
	case me.floor == beside:
		return ""
	case them.floor == beside:
		return "the tower never imports a package kept beside it for tests"
	case them.rank <= me.rank:
		return "a package imports only those listed after it"
	}
	return ""
}

// readMap parses the code block of §2: one package a line at its start
// (indented by two spaces for a subpackage), descriptions after it, and
// rules of "──" separating the tower, the ground floor and what stands
// beside them.
func readMap(t *testing.T, path string) map[string]layer {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layers := map[string]layer{}
	inSection, inBlock := false, false
	fl := tower
	sc := bufio.NewScanner(f)
	for rank := 0; sc.Scan(); rank++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = strings.HasPrefix(line, "## 2. ")
			continue
		case !inSection:
			continue
		case strings.HasPrefix(line, "```"):
			if inBlock {
				return layers
			}
			inBlock = true
			continue
		case !inBlock:
			continue
		case strings.HasPrefix(line, "──"):
			fl++
			continue
		}
		name := mapEntry(line)
		if name == "" {
			continue
		}
		if _, dup := layers[name]; dup {
			t.Errorf("docs/architecture.md §2 lists %q twice", name)
		}
		layers[name] = layer{floor: fl, rank: rank}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s: no code block under \"## 2. \"", path)
	return nil
}

// mapEntry returns the package a line of the map names, "" for a line that
// goes on describing the one before. The root package is written "baton".
func mapEntry(line string) string {
	trimmed := strings.TrimPrefix(line, "  ")
	if trimmed == "" || trimmed[0] == ' ' {
		return ""
	}
	name, _, _ := strings.Cut(trimmed, " ")
	if name == "baton" {
		return "."
	}
	return name
}

// modulePackages maps each directory of the module that holds a package
// (non-test Go files, outside testdata) to the module's packages its
// non-test files import, as directories.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			// A directory with a go.mod of its own (e2e/compat) is another module.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		imports := pkgs[dir]
		for _, spec := range af.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if imp == module {
				imp = "."
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				imp = rest
			} else {
				continue
			}
			if !slices.Contains(imports, imp) {
				imports = append(imports, imp)
			}
		}
		pkgs[dir] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}
