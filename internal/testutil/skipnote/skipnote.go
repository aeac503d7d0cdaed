// Package skipnote counts the tests a package skips, because a component
// it needs (PostgreSQL, Chromium, an AWS client) is missing or because they
// are long suites that run only when BATON_LONG_TESTS=1, and says so in one
// line when the package's tests end.
//
// go test ./... shows nothing but "ok" for a package that passed, so a
// suite that skipped everything for want of PostgreSQL would look like one
// that ran. Main writes the line to the terminal the tests were started
// from (/dev/tty) when there is one, where it stands beside the package's
// "ok", and to standard error otherwise (shown under -v, or when the
// package fails). CI sets BATON_REQUIRE_* so that a missing component
// fails instead of skipping, and BATON_LONG_TESTS=1 so that the long
// suites run.
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
	mu   sync.Mutex
	why  map[string]int // component: how many tests skipped for it
	long int            // long suites skipped (SkipUnlessLong)
}

// LongEnv is the variable that runs the long suites when "1": the fault
// suites of minutes each (failover, crash rounds, full disks, several
// nodes), which the README's test command leaves out. CI sets it.
const LongEnv = "BATON_LONG_TESTS"

// Long reports whether the long suites run (LongEnv is "1").
func Long() bool { return os.Getenv(LongEnv) == "1" }

// SkipUnlessLong skips tb, and counts it for Main's line, unless the long
// suites run; what says in a few words what the suite does, for the skip
// message.
func SkipUnlessLong(tb testing.TB, what string) {
	tb.Helper()
	if Long() {
		return
	}
	skipped.mu.Lock()
	skipped.long++
	skipped.mu.Unlock()
	tb.Skipf("SKIPPED, NOT RUN: a long suite (%s); %s=1 runs it, as CI does", what, LongEnv)
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
// ("pgstore.test"), or "" when no test was skipped.
func Line(binary string) string {
	skipped.mu.Lock()
	defer skipped.mu.Unlock()
	var said []string
	if skipped.long > 0 {
		them := "them"
		if skipped.long == 1 {
			them = "it"
		}
		said = append(said, fmt.Sprintf("SKIPPED %s (%s=1 runs %s, as CI does)", plural(skipped.long, "long suite", "long suites"), LongEnv, them))
	}
	if len(skipped.why) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(skipped.why)) {
			parts = append(parts, plural(skipped.why[c], "test that needs ", "tests that need ")+c)
		}
		said = append(said, fmt.Sprintf("SKIPPED %s (missing here; see docs/testing.md)", strings.Join(parts, ", ")))
	}
	if len(said) == 0 {
		return ""
	}
	return strings.TrimSuffix(binary, ".test") + ": " + strings.Join(said, "; ")
}

// plural is n with the noun that fits it.
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
