package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// dedupEntry is an accepted deduplication key: when, and the message it
// stored. The message's id and sequence number are kept parsed, as an
// entry's are; other holds them as given when they do not parse.
type dedupEntry struct {
	at    int64 // nanos(t)
	seq   uint64
	id    [16]byte
	other *dedupStrings
}

type dedupStrings struct{ messageID, seq string }

func newDedupEntry(messageID, seq string, at time.Time) dedupEntry {
	d := dedupEntry{at: nanos(at)}
	k, ok := ids.ParseUUID(messageID)
	n, err := parseSeq(seq)
	if ok && err == nil && seq != "" {
		d.id, d.seq = k, n
		return d
	}
	d.other = &dedupStrings{messageID: messageID, seq: seq}
	return d
}

func (d *dedupEntry) messageID() string {
	if d.other != nil {
		return d.other.messageID
	}
	return ids.FormatUUID(d.id)
}

func (d *dedupEntry) sequenceNumber() string {
	if d.other != nil {
		return d.other.seq
	}
	return formatSeq(d.seq)
}

func (s *Store) MessageSend(_ context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	out := make([]baton.MessageSent, len(p.Messages))
	for i, m := range p.Messages {
		var seq string
		if qs.fifo {
			key := p.DedupKeys[i]
			if d, ok := qs.dedup[key]; ok && d.at > nanos(p.DedupCutoff) {
				out[i] = baton.MessageSent{MessageID: d.messageID(), SequenceNumber: d.sequenceNumber(), Duplicate: true}
				continue
			}
			qs.seq++
			seq = formatSeq(qs.seq)
			qs.dedup[key] = newDedupEntry(m.ID, seq, m.SentAt)
		}
		r := qs.newEntry(m)
		if seq != "" {
			qs.extraOf(qs.es.at(r)).seq = seq
		} else {
			seq = m.SequenceNumber
		}
		qs.add(r, m.ID, m.GroupID)
		out[i] = baton.MessageSent{MessageID: m.ID, SequenceNumber: seq}
	}
	qs.forgetDedup(p.DedupCutoff)
	return out, nil
}

// forgetDedup drops deduplication entries past the window, a few at a time
// so no send pays for all of them.
func (qs *queueState) forgetDedup(cutoff time.Time) {
	n, c := 0, nanos(cutoff)
	for k, d := range qs.dedup {
		if n++; n > 16 {
			return
		}
		if d.at <= c {
			delete(qs.dedup, k)
		}
	}
}

// formatSeq renders a sequence number as SQS does: a large decimal that
// grows with every message (fixed width keeps text order numeric).
func formatSeq(n uint64) string { return fmt.Sprintf("%020d", seqBase+n) }

// seqBase makes sequence numbers look like SQS's 20-digit ones.
const seqBase = 10000000000000000000

// cloneAttributes copies attrs deeply, so that neither the caller of
// MessageSend nor the receiver of a returned message shares the attribute
// map or binary values with the store.
func cloneAttributes(attrs map[string]baton.MessageAttribute) map[string]baton.MessageAttribute {
	if attrs == nil {
		return nil
	}
	c := make(map[string]baton.MessageAttribute, len(attrs))
	for k, a := range attrs {
		if a.BinaryValue != nil {
			a.BinaryValue = append([]byte(nil), a.BinaryValue...)
		}
		c[k] = a
	}
	return c
}
