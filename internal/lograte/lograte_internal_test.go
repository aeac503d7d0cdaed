package lograte

import (
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// admit is Admit for a test, failing it when the answer is not the one
// wanted.
func admit(t *testing.T, l *Limiter, key string, wantHeld int, wantOK bool) {
	t.Helper()
	if held, ok := l.Admit(key); held != wantHeld || ok != wantOK {
		t.Fatalf("Admit(%q) = %d, %v; want %d, %v", key, held, ok, wantHeld, wantOK)
	}
}

// The first line of a kind is written at once; those within the interval
// after it are held back and counted; the first once the interval has
// passed is written with that count; each kind keeps its own interval.
func TestAdmitHoldsBackRepeats(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := New(fake, 10*time.Second)
	admit(t, l, "a", 0, true)
	for range 99 {
		fake.Advance(100 * time.Millisecond)
		admit(t, l, "a", 0, false)
	}
	admit(t, l, "b", 0, true)            // another kind is not held back by a
	fake.Advance(100 * time.Millisecond) // 10 s since a's line
	admit(t, l, "a", 99, true)
	admit(t, l, "a", 0, false)
	fake.Advance(10 * time.Second)
	admit(t, l, "a", 1, true)
	fake.Advance(time.Hour) // none held back since: a fresh start
	admit(t, l, "a", 0, true)
	admit(t, l, "b", 0, true)
}

// After Forget the next line of the kind is written at once, with nothing
// held back before it.
func TestForget(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := New(fake, 10*time.Second)
	admit(t, l, "", 0, true)
	admit(t, l, "", 0, false)
	l.Forget("")
	admit(t, l, "", 0, true)
	admit(t, l, "", 0, false)
}

// Kinds that may name a client (one per address) do not pile up: those
// whose interval passed with none held back are dropped, which changes no
// answer, while one with lines held back keeps its count.
func TestKindsDoNotPileUp(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := New(fake, 10*time.Second)
	admit(t, l, "busy", 0, true)
	admit(t, l, "busy", 0, false)
	for i := range 10000 {
		admit(t, l, fmt.Sprint("TLS handshake error from 10.0.", i/256, ".", i%256), 0, true)
		fake.Advance(10 * time.Millisecond)
	}
	if n := len(l.kinds); n > 3000 {
		t.Errorf("%d kinds kept after 10000 lines of distinct kinds, 1000 a second, for an interval of 10 s", n)
	}
	admit(t, l, "busy", 1, true)
	admit(t, l, "TLS handshake error from 10.0.39.15", 0, false) // the last, within its interval, is kept
}

// AdmitSince says when the line before the held-back ones was written:
// lines held back in a burst that ended are counted by the next line
// written, however long after, and it must not read as if they came
// within the interval before it.
func TestAdmitSinceSaysWhenTheHeldBackBegan(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := clock.NewFake(start)
	l := New(fake, 10*time.Second)
	if held, since, ok := l.AdmitSince("a"); held != 0 || !since.IsZero() || !ok {
		t.Fatalf("first AdmitSince = %d, %v, %v; want 0, zero, true", held, since, ok)
	}
	for range 5 { // a burst of 5 in a second, then nothing
		fake.Advance(200 * time.Millisecond)
		l.AdmitSince("a")
	}
	fake.Advance(time.Hour)
	if held, since, ok := l.AdmitSince("a"); held != 5 || !since.Equal(start) || !ok {
		t.Fatalf("AdmitSince an hour later = %d, %v, %v; want 5, %v (the line before the burst), true", held, since, ok, start)
	}
}

// flush gives the count of the lines held back since the last written, and
// counts its own line as written: the next line within the interval after
// it is held back, and counts only those since.
func TestFlushCountsOwnLine(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := New(fake, 10*time.Second)
	if held, _, ok := l.flush("a"); ok || held != 0 {
		t.Fatalf("flush of a kind never seen = %d, %v; want nothing", held, ok)
	}
	first := fake.Now()
	admit(t, l, "a", 0, true)
	if held, _, ok := l.flush("a"); ok || held != 0 {
		t.Fatalf("flush with none held back = %d, %v; want nothing", held, ok)
	}
	for range 3 {
		fake.Advance(time.Second)
		admit(t, l, "a", 0, false)
	}
	fake.Advance(7 * time.Second)
	held, since, ok := l.flush("a")
	if !ok || held != 3 || !since.Equal(first) {
		t.Fatalf("flush = %d since %v, %v; want 3 since %v", held, since, ok, first)
	}
	if held, _, ok := l.flush("a"); ok || held != 0 {
		t.Fatalf("flush again = %d, %v; want nothing", held, ok)
	}
	flushed := fake.Now()
	fake.Advance(time.Second)
	admit(t, l, "a", 0, false) // within the interval after the flushed line
	fake.Advance(10 * time.Second)
	if held, since, ok := l.AdmitSince("a"); !ok || held != 1 || !since.Equal(flushed) {
		t.Fatalf("AdmitSince after the flushed line's interval = %d since %v, %v; want 1 since %v", held, since, ok, flushed)
	}
}
