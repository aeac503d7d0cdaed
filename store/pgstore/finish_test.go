package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// keptNames are the names of the kept indexes of kept (as keptGroups and
// the others write them).
func keptNames(kept []string) []string {
	var out []string
	for _, k := range kept {
		name, _, _ := strings.Cut(k, ":")
		out = append(out, name)
	}
	return out
}

func droppedNames(dropped []pgstore.KeptIndex) []string {
	var out []string
	for _, k := range dropped {
		out = append(out, k.Name)
	}
	return out
}

// TestFinishUpgradeDropsKeptIndexes: on a database upgraded from schema
// 0011, or 0012 as released, a node of this release logs at start that
// the database keeps indexes for the release before and how to drop them.
// FinishUpgrade refuses while a session without the build mark (an old
// node's: named "baton", as every release names its sessions) is
// connected, naming it and dropping nothing; once it is gone, it drops
// them while a node of this release is serving (its sessions hold the
// mark), leaving the indexes of a new database; run again it does
// nothing, and a node started then logs nothing of kept indexes.
func TestFinishUpgradeDropsKeptIndexes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		upTo     int
		released bool
		kept     []string
	}{{11, false, append([]string{keptGroups}, keptStates11...)}, {12, true, []string{keptGroups, keptStates12}}} {
		t.Run(fmt.Sprint(c.upTo), func(t *testing.T) {
			t.Parallel()
			url := pgtest.MustDatabase(t)
			oldSchema(t, url, c.upTo, c.released, 2000)
			old := pgtest.MustConnect(t, url+"&application_name=baton")
			var oldPID int
			if err := old.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&oldPID); err != nil {
				t.Fatal(err)
			}

			logs := &logbuf.Buffer{}
			s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n := strings.Count(logs.String(), "baton store finish-upgrade"); n != 1 {
				t.Errorf("the start on a database with kept indexes logged %d lines naming the finishing step, want 1:\n%s", n, logs)
			}
			for _, name := range keptNames(c.kept) {
				if !strings.Contains(logs.String(), name) {
					t.Errorf("the start's log does not name %s:\n%s", name, logs)
				}
			}

			// The node of this release serves: its sessions are connected.
			if err := s.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			dropped, err := pgstore.FinishUpgrade(t.Context(), url, pgstore.FinishOptions{})
			var refused *pgstore.UnmarkedSessionsError
			switch {
			case !errors.As(err, &refused):
				t.Fatalf("with an old node's session connected: dropped %v, err %v; want a refusal", droppedNames(dropped), err)
			case len(dropped) > 0 || len(refused.Dropped) > 0:
				t.Errorf("the refusal dropped %v", droppedNames(dropped))
			case len(refused.Sessions) != 1 || refused.Sessions[0].PID != oldPID || refused.Sessions[0].ApplicationName != "baton":
				t.Errorf("the refusal names %v, want the old session alone (pid %d); the open store's sessions hold the mark", refused.Sessions, oldPID)
			case !strings.Contains(err.Error(), fmt.Sprintf("pid %d", oldPID)):
				t.Errorf("the refusal does not name the session: %v", err)
			}
			checkMessageIndexes(t, old, c.kept...)
			old.Close(t.Context())

			dropped, err = pgstore.FinishUpgrade(t.Context(), url, pgstore.FinishOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := droppedNames(dropped), keptNames(c.kept); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
				t.Errorf("dropped %v, want %v", got, want)
			}
			dropped, err = pgstore.FinishUpgrade(t.Context(), url, pgstore.FinishOptions{})
			if err != nil || len(dropped) > 0 {
				t.Errorf("run again: dropped %v, %v; want nothing", droppedNames(dropped), err)
			}
			s.Close()

			logs = &logbuf.Buffer{}
			s2, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			s2.Close()
			if strings.Contains(logs.String(), "finish-upgrade") {
				t.Errorf("a start with no kept index logged:\n%s", logs)
			}
			conn := pgtest.MustConnect(t, url)
			checkMessageIndexes(t, conn)
		})
	}
}

// TestFinishUpgradeRefusesAnUnmigratedDatabase: on a database of schema
// 0012 no node of this release has migrated, FinishUpgrade refuses and
// drops nothing; on a new database it has nothing to drop.
func TestFinishUpgradeRefusesAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	oldSchema(t, url, 12, true, 100)
	dropped, err := pgstore.FinishUpgrade(t.Context(), url, pgstore.FinishOptions{})
	if !errors.Is(err, pgstore.ErrNotUpgraded) || len(dropped) > 0 || !strings.Contains(err.Error(), "schema version 12") {
		t.Errorf("on schema 12: dropped %v, %v; want ErrNotUpgraded naming version 12", droppedNames(dropped), err)
	}
	conn := pgtest.MustConnect(t, url)
	if got := messageIndexes(t, conn); !slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, "baton_messages_by_state:") && !strings.Contains(s, "WHERE")
	}) {
		t.Errorf("the indexes of schema 12 changed:\n%s", strings.Join(got, "\n"))
	}

	fresh := pgtest.MustDatabase(t)
	mustOpen(t, fresh)
	dropped, err = pgstore.FinishUpgrade(t.Context(), fresh, pgstore.FinishOptions{})
	if err != nil || len(dropped) > 0 {
		t.Errorf("on a new database: dropped %v, %v; want nothing", droppedNames(dropped), err)
	}
}

// TestFinishUpgradeWaitsForMigrations: while a node of this release holds
// the migration lock (migrating), FinishUpgrade waits for it and drops
// nothing; once the lock is free, it goes on.
func TestFinishUpgradeWaitsForMigrations(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	oldSchema(t, url, 12, true, 100)
	mustOpen(t, url).Close()
	// A session as a migrating node's: the build mark and the migration
	// lock ("baton" in ASCII).
	migrating := pgtest.MustConnect(t, url)
	mustExec(t, migrating, `SELECT pg_advisory_lock_shared(1650553967, 13)`)
	mustExec(t, migrating, `SELECT pg_advisory_lock(422541815662)`)

	type result struct {
		dropped []pgstore.KeptIndex
		err     error
	}
	done := make(chan result, 1)
	go func() {
		dropped, err := pgstore.FinishUpgrade(context.Background(), url, pgstore.FinishOptions{})
		done <- result{dropped, err}
	}()
	// Wait until it has tried the lock, held here.
	deadline := time.Now().Add(time.Minute)
	for {
		var tries int
		err := migrating.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'SELECT pg_try_advisory_lock%'`).Scan(&tries)
		if err != nil {
			t.Fatal(err)
		}
		if tries > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("FinishUpgrade returned (dropped %v, %v) while the migration lock was held", droppedNames(r.dropped), r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("FinishUpgrade did not come to try the migration lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// It tried, found the lock held, and waits.
	select {
	case r := <-done:
		t.Fatalf("FinishUpgrade returned (dropped %v, %v) while the migration lock was held", droppedNames(r.dropped), r.err)
	default:
	}
	checkMessageIndexes(t, migrating, keptGroups, keptStates12)
	mustExec(t, migrating, `SELECT pg_advisory_unlock(422541815662)`)
	select {
	case r := <-done:
		if r.err != nil || len(r.dropped) != 2 {
			t.Errorf("once the lock was free: dropped %v, %v; want the two kept indexes", droppedNames(r.dropped), r.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("FinishUpgrade did not end once the migration lock was free")
	}
	checkMessageIndexes(t, migrating)
}
