package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// A queue's records (its messages, their bodies, its sequence counter and
// deduplication keys) are written with the queue's and deleted with it, in
// one batch: records of a queue the log does not hold mean the log lost
// the queue's record (or kept records it had deleted), through a damaged
// file. checkOrphans finds them, with a seek per queue and kind, before
// the index is built from records that contradict each other.

// orphans are the records of one kind of a queue the log does not hold.
type orphans struct {
	kind    byte
	queueID uint64
	records int
	// tables are the log's tables that hold such records.
	tables []string
}

// kindNames says what the records of each kind are.
var kindNames = map[byte]string{
	kindSeq: "sequence counter", kindState: "message", kindPayload: "message body", kindDedup: "deduplication key",
}

func (o orphans) String() string {
	where := "the write-ahead log"
	if len(o.tables) > 0 {
		where = strings.Join(o.tables, ", ")
	}
	return fmt.Sprintf("%d %s records of queue id %d (in %s)", o.records, kindNames[o.kind], o.queueID, where)
}

// queueIDs reads the ids of the queues the log holds.
func queueIDs(db *pebble.DB) (map[uint64]bool, error) {
	ids := make(map[uint64]bool)
	lo, hi := span(kindQueue)
	err := scanLog(db, lo, hi, func(k, _ []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("queue key %x: %w", k, errBadRecord)
		}
		ids[queueIDOf(k)] = true
		return nil
	})
	return ids, err
}

// checkOrphans returns the records of queues that queues does not hold.
func checkOrphans(db *pebble.DB, logDir string, queues map[uint64]bool) ([]orphans, error) {
	var out []orphans
	for _, kind := range []byte{kindSeq, kindState, kindPayload, kindDedup} {
		lo, hi := span(kind)
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return nil, err
		}
		for valid := it.First(); valid; {
			id := queueIDOf(it.Key())
			end := queueEnd(kind, id)
			if queues[id] {
				valid = it.SeekGE(end)
				continue
			}
			o := orphans{kind: kind, queueID: id}
			for ; valid && bytes.Compare(it.Key(), end) < 0; valid = it.Next() {
				o.records++
			}
			o.tables = tablesHolding(db, logDir, queueKey(kind, id), end)
			out = append(out, o)
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tablesHolding names the tables of the log that hold keys in [lo, hi).
func tablesHolding(db *pebble.DB, logDir string, lo, hi []byte) []string {
	levels, err := db.SSTables(pebble.WithKeyRangeFilter(lo, hi))
	if err != nil {
		return nil
	}
	var names []string
	for _, level := range levels {
		for _, t := range level {
			names = append(names, filepath.Join(logDir, t.BackingSSTNum.String()+".sst"))
		}
	}
	return names
}

// orphansError is the error of a log holding orphans.
func orphansError(logDir string, os []orphans) error {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = o.String()
	}
	return fmt.Errorf("%w: the log in %s holds records of queues it has no record of: %s; "+
		"the queues' own records were lost through a damaged file (a MANIFEST, table or write-ahead log). "+
		"See `baton store check` and `baton store salvage`", ErrDamaged, logDir, strings.Join(parts, "; "))
}
