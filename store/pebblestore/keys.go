package pebblestore

import (
	"encoding/binary"
	"time"
)

// The store's keys. Each begins with a byte naming its kind; integers are
// big-endian, so that keys sort by them. Messages are keyed by queue and
// pos, and kept in two records: their state (metadata and lease state),
// rewritten by every receive and visibility change and read by Open, and
// their payload (body, attributes, trace header), written once and read by
// receives. A purge or a queue deletion is a range deletion of its queue's
// keys, and so costs the same whatever the queue holds.
const (
	// kindFormat: the format version of the directory (formatKey).
	kindFormat = 'F'
	// kindQueue + queue id: the queue (encodeQueue).
	kindQueue = 'Q'
	// kindSeq + queue id: the SequenceNumber last given in the queue.
	kindSeq = 'N'
	// kindState + queue id + pos: a message's id and state (encodeRecord).
	kindState = 'M'
	// kindPayload + queue id + pos: a message's payload (encodePayload).
	kindPayload = 'P'
	// kindDedup + queue id + time accepted + key: a FIFO deduplication key
	// (encodeDedup); keyed by time, so that those past the deduplication
	// interval go with one range deletion.
	kindDedup = 'D'
	// kindTombstone + region, account, name (length-prefixed): when the
	// queue was deleted, as Unix nanoseconds.
	kindTombstone = 'T'
	// kindTask + handle: a message move task (encodeTask).
	kindTask = 'K'
	// kindMark: the generation of the log, which MarkFile repeats.
	kindMark = 'H'
)

// format is the version of the key layout and encodings this package
// writes; Open refuses a directory of a later one.
const format = 1

var formatKey = []byte{kindFormat}

// queueKey returns kind + queue id + the big-endian integers in rest.
func queueKey(kind byte, queueID uint64, rest ...uint64) []byte {
	k := make([]byte, 0, 9+8*len(rest))
	return appendQueueKey(k, kind, queueID, rest...)
}

func appendQueueKey(k []byte, kind byte, queueID uint64, rest ...uint64) []byte {
	k = append(k, kind)
	k = binary.BigEndian.AppendUint64(k, queueID)
	for _, n := range rest {
		k = binary.BigEndian.AppendUint64(k, n)
	}
	return k
}

// queueSpan returns the bounds [start, end) of kind's keys of queueID with
// their first integer after the queue id from 0 through last.
func queueSpan(kind byte, queueID, last uint64) (start, end []byte) {
	start = queueKey(kind, queueID)
	if last == ^uint64(0) {
		return start, queueEnd(kind, queueID)
	}
	return start, queueKey(kind, queueID, last+1)
}

// queueEnd is the first key past kind's keys of queueID.
func queueEnd(kind byte, queueID uint64) []byte {
	if queueID == ^uint64(0) {
		return []byte{kind + 1}
	}
	return queueKey(kind, queueID+1)
}

// parseQueueKey splits a key of kind + queue id + n: the id and n.
func parseQueueKey(k []byte) (queueID, n uint64, ok bool) {
	if len(k) < 17 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:17]), true
}

// dedupKey is the key of a deduplication key accepted at.
func dedupKey(queueID uint64, at time.Time, key string) []byte {
	return append(queueKey(kindDedup, queueID, uint64(encTime(at))), key...)
}

// tombstoneKey is the key of a deleted queue's name.
func tombstoneKey(region, account, name string) []byte {
	k := []byte{kindTombstone}
	for _, s := range []string{region, account, name} {
		k = binary.AppendUvarint(k, uint64(len(s)))
		k = append(k, s...)
	}
	return k
}

// taskKey is the key of a move task.
func taskKey(handle string) []byte { return append([]byte{kindTask}, handle...) }
