package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/baton-sqs/baton"
)

// payload is the part of a message kept on disk only.
type payload struct {
	body    string
	bodyMD5 string // empty in rows written before the column was
	attrs   []byte // encodeAttributes
	trace   string
}

func payloadOf(m *baton.Message) payload {
	return payload{body: m.Body, bodyMD5: m.BodyMD5, attrs: encodeAttributes(m.Attributes), trace: m.TraceHeader}
}

// fill puts p into m.
func (p payload) fill(m *baton.Message) error {
	attrs, err := decodeAttributes(p.attrs)
	if err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	m.Body, m.BodyMD5, m.Attributes, m.TraceHeader = p.body, p.bodyMD5, attrs, p.trace
	return nil
}

// committed forgets the pending payloads of committed rows.
func (s *Store) committed(rows []int64) {
	if len(rows) == 0 {
		return
	}
	s.pendMu.Lock()
	for _, pos := range rows {
		delete(s.pending, pos)
	}
	s.pendMu.Unlock()
}

// row names a message's database row.
type row struct {
	id  string
	pos int64
}

// payloads finds the payloads of messages: pending ones first, the rest in
// the database. A message found in neither is gone and is missing from the
// result, which is keyed by pos.
func (s *Store) payloads(ctx context.Context, rs []row) (map[int64]payload, error) {
	out := make(map[int64]payload, len(rs))
	var rest []int64
	s.pendMu.Lock()
	for _, r := range rs {
		if p, ok := s.pending[r.pos]; ok {
			out[r.pos] = p
		} else {
			rest = append(rest, r.pos)
		}
	}
	s.pendMu.Unlock()
	// A payload leaves pending only after its commit, so a message not
	// pending now is in the database, or gone.
	const chunk = baton.MaxBatchEntries
	for len(rest) > 0 {
		n := min(len(rest), chunk)
		if err := s.readPayloads(ctx, rest[:n], out); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

func (s *Store) readPayloads(ctx context.Context, rows []int64, out map[int64]payload) error {
	stmt, err := s.readStmt(ctx, len(rows))
	if err != nil {
		return err
	}
	args := make([]any, len(rows))
	for i, pos := range rows {
		args[i] = pos
	}
	rs, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("sqlitestore: read bodies: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var pos int64
		var p payload
		if err := rs.Scan(&pos, &p.body, &p.attrs, &p.trace, &p.bodyMD5); err != nil {
			return fmt.Errorf("sqlitestore: read bodies: %w", err)
		}
		out[pos] = p
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("sqlitestore: read bodies: %w", err)
	}
	return nil
}

// readStmt returns the prepared payload read of n rows.
func (s *Store) readStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if st, ok := s.readStmts[n]; ok {
		return st, nil
	}
	q := `SELECT pos, body, attributes, trace_header, body_md5 FROM messages WHERE pos IN (?` + strings.Repeat(", ?", n-1) + `)`
	st, err := s.rdb.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: prepare body read: %w", err)
	}
	s.readStmts[n] = st
	return st, nil
}

// withPayloads gives msgs, found at rs, their payloads, and returns those
// that still have one (not purged, their queue not deleted, meanwhile).
func (s *Store) withPayloads(ctx context.Context, msgs []*baton.Message, rs []row) ([]*baton.Message, error) {
	pays, err := s.payloads(ctx, rs)
	if err != nil {
		return nil, err
	}
	out := make([]*baton.Message, 0, len(msgs))
	for j, m := range msgs {
		pay, ok := pays[rs[j].pos]
		if !ok {
			continue
		}
		if err := pay.fill(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
