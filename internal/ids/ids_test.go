package ids_test

import (
	"testing"

	"github.com/baton-sqs/baton/internal/ids"
)

// TestParseUUID checks that the UUIDs NewUUID makes parse to bytes that
// format back to them, and that other ids, upper-case UUIDs among them, do
// not parse: the index keeps those as they are.
func TestParseUUID(t *testing.T) {
	t.Parallel()
	id := ids.NewUUID()
	k, ok := ids.ParseUUID(id)
	if !ok || ids.FormatUUID(k) != id {
		t.Errorf("ParseUUID(%q) = %x, %v; formats back to %q", id, k, ok, ids.FormatUUID(k))
	}
	for _, other := range []string{
		"",
		"1",
		"00000000-0000-4000-8000-00000000000A",
		"00000000-0000-4000-8000-00000000000",
		"00000000x0000-4000-8000-000000000000",
		"00000000-0000-4000-8000-0000000000000",
	} {
		if _, ok := ids.ParseUUID(other); ok {
			t.Errorf("ParseUUID(%q) parsed", other)
		}
	}
}
