// Package skipnote counts the tests a package skips because a component it
// needs (PostgreSQL, Chromium, an AWS client) is missing, and says so in
// one line when the package's tests end.
//
// go test ./... shows nothing but "ok" for a package that passed, so a
// suite that skipped everything for want of PostgreSQL would look like one
// that ran. Main writes the line to the terminal the tests were started
// from (/dev/tty) when there is one, where it stands beside the package's
// "ok", and to standard error otherwise (shown under -v, or when the
// package fails). CI sets BATON_REQUIRE_* so that a missing component
// fails instead of skipping.
package skipnote

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var skipped struct {
	mu  sync.Mutex
	why map[string]int // component: how many tests skipped for it
}

// Skip records that tb is skipped because component is missing, then
// skips it with the message format and args give.
func Skip(tb testing.TB, component, format string, args ...any) {
	tb.Helper()
	skipped.mu.Lock()
	if skipped.why == nil {
		skipped.why = make(map[string]int)
	}
	skipped.why[component]++
	skipped.mu.Unlock()
	tb.Skipf(format, args...)
}

// Main runs the package's tests and then says which of them were skipped
// for a missing component, if any. Call it from TestMain:
// os.Exit(skipnote.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if line := Line(filepath.Base(os.Args[0])); line != "" {
		out := os.Stderr
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			out = tty
		}
		fmt.Fprintln(out, line)
	}
	return code
}

// Line is the one line Main writes for the test binary named binary
// ("pgstore.test"), or "" when no test was skipped for a component.
func Line(binary string) string {
	skipped.mu.Lock()
	defer skipped.mu.Unlock()
	if len(skipped.why) == 0 {
		return ""
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(skipped.why)) {
		n := skipped.why[c]
		tests := "tests that need"
		if n == 1 {
			tests = "test that needs"
		}
		parts = append(parts, fmt.Sprintf("%d %s %s", n, tests, c))
	}
	return fmt.Sprintf("%s: SKIPPED %s (missing here; see README, Test it)", strings.TrimSuffix(binary, ".test"), strings.Join(parts, ", "))
}
