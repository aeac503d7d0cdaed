package pebblestore_test

import (
	"testing"

	"github.com/baton-sqs/baton/store/pebblestore"
)

// TestOpenRefusesBadRegion: a default region that cannot be one is refused.
func TestOpenRefusesBadRegion(t *testing.T) {
	t.Parallel()
	if s, err := pebblestore.Open(t.Context(), t.TempDir(), pebblestore.Options{DefaultRegion: "US East"}); err == nil {
		s.Close()
		t.Fatal("Open accepted the default region \"US East\"")
	}
}
