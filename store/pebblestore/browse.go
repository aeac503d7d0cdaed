package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/baton-sqs/baton"
)

// MessageBrowse lists a page of the queue's messages without changing
// them; see baton.Store. The index chooses the page and the log gives the
// chosen messages their payloads, as for a receive. The index holds no
// bodies, so a body filter first finds the queue's matching messages with
// one scan of its payloads in the log (and of the payloads not committed
// yet), and the index keeps only those. A message sent while the page is
// read may be missing from it, as if it had come just after.
func (s *Store) MessageBrowse(ctx context.Context, p baton.MessageBrowseParams) (baton.MessageBrowsePage, error) {
	ip := p
	var match map[int64]bool
	if p.BodyContains != "" {
		ip.BodyContains = ""
		var err error
		if match, err = s.bodyMatches(p.QueueID, p.BodyContains); err != nil {
			return baton.MessageBrowsePage{}, err
		}
	}
	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	var keep func(id string, pos uint64) bool
	if match != nil {
		// The payloads not committed yet: those of this queue's sends
		// stay pending until their commit, and a send queues under the
		// stripe's lock, which this call holds.
		s.pendMu.Lock()
		for pos, pay := range s.pending {
			if strings.Contains(pay.body, p.BodyContains) {
				match[pos] = true
			}
		}
		s.pendMu.Unlock()
		keep = func(_ string, pos uint64) bool { return match[int64(pos)] }
	}
	page, err := s.index.MessageBrowseFunc(ctx, ip, keep)
	if err != nil {
		return baton.MessageBrowsePage{}, err
	}
	rs := make([]row, 0, len(page.Messages))
	for _, m := range page.Messages {
		pos, ok := s.rowOf(p.QueueID, m.ID)
		if !ok {
			return baton.MessageBrowsePage{}, fmt.Errorf("pebblestore: message %s has no pos", m.ID)
		}
		rs = append(rs, row{m.ID, pos})
	}
	// Answer only from committed state, as every call does.
	b := s.w.enqueue(nil, nil)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return baton.MessageBrowsePage{}, err
	}
	// A message deleted meanwhile has no payload and leaves the page; the
	// cursor still continues after the page's last message.
	if page.Messages, err = s.withPayloads(p.QueueID, page.Messages, rs); err != nil {
		return baton.MessageBrowsePage{}, err
	}
	return page, nil
}

// bodyMatches returns the pos of the queue's messages in the log whose
// body holds sub, byte for byte; it fails with baton.ErrUnavailable if
// one cannot be read.
func (s *Store) bodyMatches(queueID uint64, sub string) (map[int64]bool, error) {
	match := make(map[int64]bool)
	err := s.scan(queueKey(kindPayload, queueID), queueEnd(kindPayload, queueID), func(k, v []byte) error {
		body, _, ok := field(v)
		if !ok {
			return errBadRecord
		}
		if bytes.Contains(body, []byte(sub)) {
			_, pos, _ := parseQueueKey(k)
			match[int64(pos)] = true
		}
		return nil
	})
	if err != nil {
		// A table that cannot be read (damaged, or the disk failing):
		// 503, as for a receive, never a page without its messages.
		s.logger.Error("pebblestore: cannot read the queue's message bodies; the browse fails (503). "+unreadableAdvice(err),
			"queue_id", queueID, "err", firstLine(err))
		return nil, fmt.Errorf("%w: pebblestore: browse bodies: %w", baton.ErrUnavailable, err)
	}
	return match, nil
}
