package batontest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOtherModule runs `go test` in testdata/usemod, a module of its own
// (example.com/orders) whose tests and example use batontest as code
// outside this repository would: through its go.mod, which requires
// github.com/baton-sqs/baton and replaces it with this repository. That
// shows the package importable and working from another module, with the
// dependencies its users get, and not only from this module's own tests.
//
// The module is copied to a temporary directory and its replace directive
// pointed at this checkout, so the test builds against the code under test
// and writes nothing into the repository. Its dependencies come from the
// Go module proxy, pinned by its go.sum: with the modules in the module
// cache it runs offline. -mod=mod lets the copy's go.mod follow this
// module's requirements when they move on before usemod's are updated.
func TestOtherModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module: not in -short")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join("testdata", "usemod")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// This module's test flags (GOFLAGS=-count=1, say) mean nothing to the
	// other module, which is no part of a workspace.
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=")
	}), "GOWORK=off", "GOFLAGS=-mod=mod")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in a copy of %s: %v\n%s", strings.Join(args, " "), src, err, out)
		}
		return string(out)
	}
	run("mod", "edit", "-replace", "github.com/baton-sqs/baton="+root)
	out := run("test", "-count=1", "-v", "./...")
	for _, want := range []string{"--- PASS: TestShipRetriesAfterLease", "--- PASS: ExampleShip", "ok  \texample.com/orders"} {
		if !strings.Contains(out, want) {
			t.Errorf("go test in the other module did not report %q:\n%s", want, out)
		}
	}
}
