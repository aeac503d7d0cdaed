package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// A task lock is a session-level advisory lock taken on a connection of its
// own, outside the pool, and held by keeping that connection open: when the
// server dies, or its link to the database breaks, PostgreSQL ends the
// session and the lock goes with it, so that another server can take the
// task over. Saving through the lock's connection doubles as a check that
// the lock is still held.

var _ baton.TaskLocker = (*Store)(nil)

// taskLocks are a Store's held locks, closed when the store closes.
type taskLocks struct {
	mu     sync.Mutex
	held   map[*taskLock]struct{}
	closed bool
}

// taskLockKey maps a lock name to the advisory lock's 64-bit key. The
// prefix keeps task keys apart from any other use of advisory locks.
func taskLockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("baton task lock\x00"))
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// TaskLock tries to take the advisory lock named key on a new connection.
// It returns nil and no error if another session holds it.
func (s *Store) TaskLock(ctx context.Context, key string) (baton.TaskLock, error) {
	ctx, cancel := context.WithTimeout(ctx, s.retryFor) // a hung database fails it at the bound
	defer cancel()
	// Most tries find the lock held by a live server: see so in pg_locks
	// through the pool rather than open a connection for nothing.
	var held bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND objsubid = 1
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
				AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid)`,
		taskLockKey(key)).Scan(&held)
	if err != nil {
		return nil, fmt.Errorf("pgstore: task lock: %w", err)
	}
	if held {
		return nil, nil
	}
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgstore: task lock: %w", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, taskLockKey(key)).Scan(&got); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("pgstore: task lock: %w", err)
	}
	if !got {
		conn.Close(context.Background())
		return nil, nil
	}
	l := &taskLock{store: s, conn: conn, key: taskLockKey(key)}
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	if s.locks.closed {
		conn.Close(context.Background())
		return nil, fmt.Errorf("pgstore: task lock: store closed")
	}
	if s.locks.held == nil {
		s.locks.held = make(map[*taskLock]struct{})
	}
	s.locks.held[l] = struct{}{}
	return l, nil
}

// closeLocks releases every held lock; later TaskLock calls fail.
func (s *Store) closeLocks() {
	s.locks.mu.Lock()
	s.locks.closed = true
	held := s.locks.held
	s.locks.held = nil
	s.locks.mu.Unlock()
	for l := range held {
		l.close()
	}
}

// taskLock is a held lock: its connection is the lock.
type taskLock struct {
	store *Store
	// mu serialises use of conn, which is not safe for concurrent use.
	mu   sync.Mutex
	conn *pgx.Conn // nil once released
	key  int64
}

// MoveTaskSave saves the task on the lock's connection, which fails once
// the session, and so the lock, is gone.
func (l *taskLock) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return fmt.Errorf("pgstore: save move task: lock released")
	}
	ctx, cancel := context.WithTimeout(ctx, l.store.retryFor)
	defer cancel()
	return saveMoveTask(ctx, l.conn, t)
}

// Release unlocks and ends the lock's session.
func (l *taskLock) Release() {
	s := l.store
	s.locks.mu.Lock()
	delete(s.locks.held, l)
	s.locks.mu.Unlock()
	l.close()
}

// close unlocks before it closes the connection: the session ends, and
// PostgreSQL drops its locks, a moment after the connection closes, and a
// released lock should be free at once.
func (l *taskLock) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, l.key)
	l.conn.Close(ctx)
	l.conn = nil
}
