package skipnote

import (
	"testing"
)

// The line names the package and counts the skipped tests per component,
// and the long suites skipped; with none skipped there is no line. (One
// test, not two: the counts are the package's, shared by its tests.)
func TestLine(t *testing.T) {
	if got := Line("pgstore.test"); got != "" {
		t.Fatalf("before any skip: %q, want no line", got)
	}
	for _, c := range []string{"PostgreSQL", "Chromium", "PostgreSQL"} {
		t.Run(c, func(t *testing.T) { Skip(t, c, "%s is missing", c) })
	}
	want := "pgstore: SKIPPED 1 test that needs Chromium, 2 tests that need PostgreSQL (missing here; see docs/testing.md)"
	if got := Line("pgstore.test"); got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}

	t.Setenv(LongEnv, "")
	ran := false
	t.Run("long", func(t *testing.T) {
		SkipUnlessLong(t, "a failover")
		ran = true
	})
	if ran {
		t.Errorf("a long suite ran without %s=1", LongEnv)
	}
	want = "pgstore: SKIPPED 1 long suite (BATON_LONG_TESTS=1 runs it, as CI does); " +
		"SKIPPED 1 test that needs Chromium, 2 tests that need PostgreSQL (missing here; see docs/testing.md)"
	if got := Line("pgstore.test"); got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}

	t.Setenv(LongEnv, "1")
	t.Run("long run", func(t *testing.T) {
		SkipUnlessLong(t, "a failover")
		ran = true
	})
	if !ran {
		t.Errorf("a long suite skipped with %s=1", LongEnv)
	}
	if got := Line("pgstore.test"); got != want {
		t.Errorf("after a long suite ran: Line = %q, want %q (unchanged)", got, want)
	}
}
