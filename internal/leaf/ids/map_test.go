package ids_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/baton-sqs/baton/internal/leaf/ids"
)

// TestMap checks that UUIDs and other ids alike are kept apart and found
// again, whichever form each takes inside.
func TestMap(t *testing.T) {
	t.Parallel()
	uuid := ids.NewUUID()
	keys := []string{
		uuid,
		"1",
		"",
		"00000000-0000-4000-8000-00000000000A", // upper case: not a UUID here
		"00000000-0000-4000-8000-00000000000a",
	}
	var m ids.Map[int]
	for i, k := range keys {
		m.Put(k, i)
	}
	if got, want := m.Len(), len(keys); got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	for i, k := range keys {
		if got, ok := m.Get(k); !ok || got != i {
			t.Errorf("Get(%q) = %d, %v; want %d, true", k, got, ok, i)
		}
	}
	if got, want := slices.Sorted(m.Values()), []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("Values() = %v, want %v", got, want)
	}
	m.Delete(uuid)
	m.Delete("1")
	if _, ok := m.Get(uuid); ok {
		t.Errorf("Get(%q) after Delete found it", uuid)
	}
	k, _ := ids.ParseUUID(keys[4])
	m.DeleteUUID(k)
	got := maps.Collect(func(yield func(int, bool) bool) {
		for v := range m.Values() {
			if !yield(v, true) {
				return
			}
		}
	})
	if want := map[int]bool{2: true, 3: true}; !maps.Equal(got, want) {
		t.Errorf("values left: %v, want %v", got, want)
	}
}

func TestNewMapPutUUID(t *testing.T) {
	t.Parallel()
	m := ids.NewMap[string](4)
	id := ids.NewUUID()
	k, ok := ids.ParseUUID(id)
	if !ok {
		t.Fatalf("ParseUUID(%q) failed", id)
	}
	m.PutUUID(k, "v")
	if got, ok := m.Get(id); !ok || got != "v" {
		t.Errorf("Get(%q) = %q, %v; want \"v\", true", id, got, ok)
	}
}
