package skipnote

import (
	"testing"
)

// The line names the package and counts the skipped tests per component;
// with none skipped there is no line.
func TestLine(t *testing.T) {
	if got := Line("pgstore.test"); got != "" {
		t.Fatalf("before any skip: %q, want no line", got)
	}
	for _, c := range []string{"PostgreSQL", "Chromium", "PostgreSQL"} {
		t.Run(c, func(t *testing.T) { Skip(t, c, "%s is missing", c) })
	}
	want := "pgstore: SKIPPED 1 test that needs Chromium, 2 tests that need PostgreSQL (missing here; see README, Test it)"
	if got := Line("pgstore.test"); got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}
